/**
 * `magpie doctor` with named bot accounts: one check per bot (`telegram`,
 * `telegram-family`, `discord-home` …), each asking the platform with its own
 * token (the fakes behind one shared API root), the default one skipped when
 * unset; a refused account names where its token is set, never the token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { channelDoctorChecks } from '../../../src/channels/registry.js';
import { type FakeDiscord, startFakeDiscord } from '../../fakes/discord-server.js';
import { type FakeTelegram, startFakeTelegram } from '../../fakes/telegram-server.js';
import { startTokenRouter, type TokenRouter } from '../../fakes/token-router.js';

const FAMILY = '101:family-doctor-SECRET';
const HOME = 'home-doctor-SECRET';
const signal = new AbortController().signal;
let telegram: FakeTelegram;
let discord: FakeDiscord;
let router: TokenRouter;

beforeAll(async () => {
  telegram = await startFakeTelegram({ token: FAMILY, botUsername: 'family_bot' });
  discord = await startFakeDiscord({ token: HOME, botUsername: 'home_bot' });
  router = await startTokenRouter({
    [FAMILY]: telegram.apiRoot,
    [HOME]: discord.apiRoot.replace(/\/api$/, ''),
  });
});
afterAll(async () => {
  for (const fake of [router, telegram, discord]) await fake.close();
});

describe('doctor checks every bot', () => {
  it('passes an accepted account, fails a refused one without its token, skips the unset default', async () => {
    const config = parseConfig({
      MAGPIE_WORKSPACE: '/tmp/magpie-accounts-doctor-ws',
      TELEGRAM_ACCOUNTS: `family=${FAMILY},work=202:work-refused-SECRET`,
      TELEGRAM_API_ROOT: router.root,
      DISCORD_ACCOUNTS: `home=${HOME}`,
      DISCORD_API_ROOT: `${router.root}/api`,
    });
    const checks = channelDoctorChecks(config).filter((c) => /^(telegram|discord)/.test(c.name));
    const results = Object.fromEntries(
      await Promise.all(checks.map(async (c) => [c.name, await c.run(signal)] as const)),
    );
    expect(Object.keys(results)).toEqual([
      'telegram',
      'telegram-family',
      'telegram-work',
      'discord',
      'discord-home',
    ]);
    expect(results.telegram).toMatchObject({
      status: 'skip',
      detail: 'TELEGRAM_BOT_TOKEN not set (channel off)',
    });
    expect(results['telegram-family']).toMatchObject({ status: 'ok', detail: 'bot @family_bot' });
    expect(results['telegram-work']).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining('TELEGRAM_ACCOUNTS ("work")'),
    });
    expect(results.discord).toMatchObject({ status: 'skip' });
    expect(results['discord-home']).toMatchObject({ status: 'ok', detail: 'bot home_bot' });
    const printed = JSON.stringify(results);
    for (const token of [FAMILY, HOME, '202:work-refused-SECRET']) expect(printed).not.toContain(token);
  });
});
