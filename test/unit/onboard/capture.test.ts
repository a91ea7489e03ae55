/**
 * Capturing the user's Telegram id against the fake Bot API: the first
 * private message from a person wins; group messages, bots' messages and
 * messages older than the wait are passed over; the captured message is left
 * unconfirmed for the bot to answer later; no message in time is undefined;
 * another reader of the updates (409) says so. Also the typed ids' checks.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkDiscordUserId } from '../../../src/channels/discord/onboard.js';
import { captureTelegramSender } from '../../../src/channels/telegram/capture.js';
import { checkTelegramUserId } from '../../../src/channels/telegram/onboard.js';
import { AppError, ConfigError } from '../../../src/errors/index.js';
import { dmUpdate, type FakeTelegram, groupUpdate, startFakeTelegram } from '../../fakes/telegram-server.js';

let telegram: FakeTelegram;
beforeEach(async () => {
  telegram = await startFakeTelegram({ token: '777:capture-token' });
});
afterEach(async () => {
  await telegram.close();
});

const options = () => ({ token: telegram.token, apiRoot: telegram.apiRoot, timeoutMs: 10_000 });

describe('captureTelegramSender', () => {
  it('takes the sender of the first private message from a person, passing over the rest', async () => {
    const old = Math.floor(Date.now() / 1000) - 3600;
    telegram.pushUpdate(groupUpdate(-100555, { id: 1 }, 'in a group'));
    telegram.pushUpdate(dmUpdate({ id: 2 }, 'from yesterday', { date: old }));
    telegram.pushUpdate(dmUpdate({ id: 3, is_bot: true } as { id: number }, 'a bot'));
    const capture = captureTelegramSender(options());
    await telegram.waitFor(() => telegram.calls.some((c) => c.method === 'getUpdates'));
    telegram.pushUpdate(dmUpdate({ id: 31337, username: 'alice' }, 'hello'));
    expect(await capture).toEqual({ id: '31337', name: '@alice' });
    // Passed-over updates are confirmed; the captured one stays for the bot to answer once it runs.
    expect(telegram.pendingUpdates()).toBe(1);
  });

  it('names a sender without a username by their first name', async () => {
    telegram.pushUpdate(dmUpdate({ id: 9, first_name: 'Bea' }, 'hi'));
    expect(await captureTelegramSender(options())).toEqual({ id: '9', name: 'Bea' });
  });

  it('no message in time: undefined', async () => {
    expect(await captureTelegramSender({ ...options(), timeoutMs: 1_200 })).toBeUndefined();
  });

  it('another reader of the updates (409) is an exit-3 error saying so, without the token', async () => {
    telegram.failNext('getUpdates', {
      error_code: 409,
      description: 'Conflict: terminated by other getUpdates request',
    });
    const err = await captureTelegramSender(options()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).exitCode).toBe(3);
    expect((err as AppError).message).toMatch(/another program reads this bot's messages/);
    expect((err as AppError).message).not.toContain(telegram.token);
  });

  it('an abort stops the wait at once', async () => {
    const ac = new AbortController();
    const capture = captureTelegramSender({ ...options(), signal: ac.signal }).catch((e: unknown) => e);
    await telegram.waitFor(() => telegram.calls.some((c) => c.method === 'getUpdates'));
    ac.abort();
    expect(await capture).toMatchObject({ code: 'CANCELLED' });
  });
});

describe('typed ids', () => {
  it('Telegram: digits, @username or *', () => {
    expect(checkTelegramUserId(' 123456789 ')).toBe('123456789');
    expect(checkTelegramUserId('@alice_b')).toBe('@alice_b');
    expect(checkTelegramUserId('*')).toBe('*');
    for (const bad of ['-100123', '12a', '**', '1,2', '@a', '@bad name', ''])
      expect(() => checkTelegramUserId(bad)).toThrow(ConfigError);
  });

  it('Discord: a 17 to 20 digit snowflake, @username or *, with a hint where to find the id', () => {
    expect(checkDiscordUserId('123456789012345678')).toBe('123456789012345678');
    expect(checkDiscordUserId('@alice.b')).toBe('@alice.b');
    expect(checkDiscordUserId('*')).toBe('*');
    expect(() => checkDiscordUserId('alice#1234')).toThrow(/Copy User ID/);
    expect(() => checkDiscordUserId('@Alice Smith')).toThrow(ConfigError);
    expect(() => checkDiscordUserId('1234')).toThrow(ConfigError);
  });
});
