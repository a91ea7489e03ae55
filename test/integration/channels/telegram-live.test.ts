/**
 * TelegramLiveSurface against the fake Bot API through the real telegraf client:
 * posts and edits change what the chat shows, "not modified" is success, a gone
 * message is DELIVERY_PERMANENT, a 429 is DELIVERY_TRANSIENT with its wait (and
 * no sleep), the final HTML falls back to plain text, deletions tolerate a gone
 * message.
 */
import { Telegram } from 'telegraf';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TelegramLiveSurface } from '../../../src/channels/telegram/live.js';
import { formatForTelegram, TelegramSender } from '../../../src/channels/telegram/sender.js';
import { AppError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { closedPort } from '../../fakes/net.js';
import { rejectedWith } from '../../fakes/rejection.js';
import {
  type FakeTelegram,
  type FakeTelegramOptions,
  startFakeTelegram,
} from '../../fakes/telegram-server.js';

const CHAT = '4242';
const target = { chatId: CHAT };

let fake: FakeTelegram;
let surface: TelegramLiveSurface;

async function start(options: FakeTelegramOptions = {}): Promise<void> {
  fake = await startFakeTelegram(options);
  surface = surfaceFor(fake.apiRoot, fake.token);
}

function surfaceFor(apiRoot: string, token: string): TelegramLiveSurface {
  const telegram = new Telegram(token, { apiRoot });
  const logger = silentLogger();
  return new TelegramLiveSurface({
    telegram,
    logger,
    sender: new TelegramSender({ telegram, logger, maxAttempts: 2, baseDelayMs: 10 }),
  });
}

const refusal = (promise: Promise<unknown>) => rejectedWith(AppError, promise);

beforeEach(async () => {
  await start();
});
afterEach(async () => {
  await fake.close();
});

describe('TelegramLiveSurface', () => {
  it('offers Telegram limits: 4096 characters, one edit per second unless told otherwise', () => {
    expect(surface.limit).toBe(4096);
    expect(surface.editIntervalMs).toBe(1000);
    const telegram = new Telegram(fake.token, { apiRoot: fake.apiRoot });
    const sender = new TelegramSender({ telegram, logger: silentLogger() });
    expect(
      new TelegramLiveSurface({ telegram, sender, logger: silentLogger(), editIntervalMs: 1500 })
        .editIntervalMs,
    ).toBe(1500);
    expect(
      () => new TelegramLiveSurface({ telegram, sender, logger: silentLogger(), editIntervalMs: -1 }),
    ).toThrow(RangeError);
  });

  it('posts plain text (no parse mode, previews off, in the thread, replying) and returns its id', async () => {
    const id = await surface.post(
      { chatId: CHAT, threadId: '77', replyTo: '555' },
      'Hello <b>not html',
      'turn:0',
    );
    const [sent] = fake.sent(CHAT);
    expect(id).toBe(String(sent!.message_id));
    expect(sent).toMatchObject({
      text: 'Hello <b>not html',
      message_thread_id: 77,
      reply_to_message_id: 555,
    });
    expect(sent!.parse_mode).toBeUndefined();
    const call = fake.calls.find((c) => c.method === 'sendMessage')!;
    expect(call.params.link_preview_options).toEqual({ is_disabled: true });
  });

  it('post then edits change what the chat shows, in place', async () => {
    const id = await surface.post(target, 'The answer', 'turn:0');
    await surface.edit(target, id, 'The answer grows');
    await surface.edit(target, id, 'The answer grows <i>plainly</i>');
    expect(fake.shown(CHAT)).toEqual(['The answer grows <i>plainly</i>']);
    expect(fake.shownMessages(CHAT)[0]).toMatchObject({ edits: 2 });
    expect(fake.shownMessages(CHAT)[0]!.parse_mode).toBeUndefined();
    expect(fake.sent(CHAT)).toHaveLength(1);
    expect(fake.edits.map((e) => e.outcome)).toEqual(['edited', 'edited']);
  });

  it('an edit to the text already shown resolves (Telegram says "not modified")', async () => {
    const id = await surface.post(target, 'same', 'turn:0');
    await expect(surface.edit(target, id, 'same')).resolves.toBeUndefined();
    expect(fake.edits.map((e) => e.outcome)).toEqual(['not_modified']);
    expect(fake.shown(CHAT)).toEqual(['same']);
  });

  it('an edit of a deleted or unknown message is DELIVERY_PERMANENT', async () => {
    const id = await surface.post(target, 'soon gone', 'turn:0');
    await surface.remove(target, id);
    const gone = await refusal(surface.edit(target, id, 'more'));
    expect(gone.code).toBe('DELIVERY_PERMANENT');
    expect(gone.transient).toBe(false);
    expect(gone.message).toMatch(/message to edit not found/);
    expect((await refusal(surface.edit(target, '987654', 'x'))).code).toBe('DELIVERY_PERMANENT');
    fake.failNext('editMessageText', {
      error_code: 400,
      description: "Bad Request: message can't be edited",
    });
    const old = await surface.post(target, 'old', 'turn:1');
    expect((await refusal(surface.edit(target, old, 'new'))).code).toBe('DELIVERY_PERMANENT');
    expect(fake.shown(CHAT)).toEqual(['old']);
  });

  it('a 429 is DELIVERY_TRANSIENT carrying retry_after, at once (no sleeping inside the edit)', async () => {
    const id = await surface.post(target, 'text', 'turn:0');
    fake.failEdits(1, 'rate_limited', 7);
    const started = Date.now();
    const limited = await refusal(surface.edit(target, id, 'text and more'));
    expect(Date.now() - started).toBeLessThan(3000);
    expect(limited.code).toBe('DELIVERY_TRANSIENT');
    expect(limited.transient).toBe(true);
    expect(limited.retryAfterMs).toBe(7000);
    expect(fake.edits.filter((e) => e.outcome === 'failed')).toHaveLength(1);
    expect(fake.calls.filter((c) => c.method === 'editMessageText')).toHaveLength(1);
    // The next edit (the renderer's retry) goes through.
    await surface.edit(target, id, 'text and more');
    expect(fake.shown(CHAT)).toEqual(['text and more']);
  });

  it('edits faster than the fake allows are refused with the wait Telegram names', async () => {
    await fake.close();
    await start({ editIntervalMs: 1500 });
    const id = await surface.post(target, 'a', 'turn:0');
    await surface.edit(target, id, 'ab');
    const limited = await refusal(surface.edit(target, id, 'abc'));
    expect(limited.code).toBe('DELIVERY_TRANSIENT');
    expect(limited.retryAfterMs).toBeGreaterThanOrEqual(1000);
    expect(fake.shown(CHAT)).toEqual(['ab']);
  });

  it('a post refused with 429 is transient with its wait; a 403 (bot blocked) is permanent', async () => {
    fake.failNext('sendMessage', {
      error_code: 429,
      description: 'Too Many Requests: retry after 2',
      parameters: { retry_after: 2 },
    });
    const limited = await refusal(surface.post(target, 'hi', 'turn:0'));
    expect([limited.code, limited.retryAfterMs]).toEqual(['DELIVERY_TRANSIENT', 2000]);
    fake.failNext('sendMessage', { error_code: 403, description: 'Forbidden: bot was blocked by the user' });
    expect((await refusal(surface.post(target, 'hi', 'turn:0'))).code).toBe('DELIVERY_PERMANENT');
    expect(fake.sent(CHAT)).toHaveLength(0);
  });

  it('a server error on an edit is transient and not retried inside the call', async () => {
    const id = await surface.post(target, 'x', 'turn:0');
    fake.failNext('editMessageText', { error_code: 502, description: 'Bad Gateway' });
    const failed = await refusal(surface.edit(target, id, 'xy'));
    expect(failed.code).toBe('DELIVERY_TRANSIENT');
    expect(failed.retryAfterMs).toBeUndefined();
    expect(fake.calls.filter((c) => c.method === 'editMessageText')).toHaveLength(1);
  });

  it('an unreachable API is DELIVERY_TRANSIENT', async () => {
    const port = await closedPort();
    const away = surfaceFor(`http://127.0.0.1:${port}`, fake.token);
    expect((await refusal(away.post(target, 'hi', 'turn:0'))).code).toBe('DELIVERY_TRANSIENT');
    expect((await refusal(away.edit(target, '10000', 'hi'))).code).toBe('DELIVERY_TRANSIENT');
  });

  it('refuses a message id that is not a Telegram id without calling the API', async () => {
    for (const bad of ['', 'abc', '12; x', '-5', '0', '1e3', '99999999999999999999']) {
      expect((await refusal(surface.edit(target, bad, 'x'))).code).toBe('DELIVERY_PERMANENT');
      expect((await refusal(surface.remove(target, bad))).code).toBe('DELIVERY_PERMANENT');
    }
    expect(fake.calls.filter((c) => c.method !== 'getMe')).toHaveLength(0);
  });

  it('finalParts are the channel send parts; editFinal shows the formatted HTML', async () => {
    const parts = surface.finalParts('**Done**: see `x < y`');
    expect(parts).toEqual(formatForTelegram('**Done**: see `x < y`'));
    const id = await surface.post(target, '**Done**: see `x < y`', 'turn:0');
    await surface.editFinal(target, id, parts[0]!);
    expect(fake.shownMessages(CHAT)).toMatchObject([
      { text: '<b>Done</b>: see <code>x &lt; y</code>', parse_mode: 'HTML' },
    ]);
    // Editing the final form again is not an error.
    await expect(surface.editFinal(target, id, parts[0]!)).resolves.toBeUndefined();
  });

  it('editFinal with HTML Telegram cannot parse falls back to the plain text', async () => {
    const id = await surface.post(target, 'draft', 'turn:0');
    await surface.editFinal(target, id, { html: '<b>unclosed', plain: '**unclosed' });
    expect(fake.shownMessages(CHAT)).toEqual([{ message_id: Number(id), text: '**unclosed', edits: 1 }]);
    const outcomes = fake.edits.map((e) => [e.parse_mode ?? 'plain', e.outcome]);
    expect(outcomes).toEqual([
      ['HTML', 'failed'],
      ['plain', 'edited'],
    ]);
  });

  it('editFinal of a deleted message is DELIVERY_PERMANENT (the renderer then posts)', async () => {
    const id = await surface.post(target, 'draft', 'turn:0');
    await surface.remove(target, id);
    const gone = await refusal(surface.editFinal(target, id, { html: '<b>x</b>', plain: '**x**' }));
    expect(gone.code).toBe('DELIVERY_PERMANENT');
  });

  it('postFinal sends a formatted part (falling back to plain) and returns its id', async () => {
    const first = await surface.postFinal(
      { chatId: CHAT, replyTo: '31' },
      { html: '<i>ok</i>', plain: '_ok_' },
      'k0',
    );
    const second = await surface.postFinal(target, { html: '<i>broken', plain: '_broken' }, 'k1');
    expect(fake.shownMessages(CHAT)).toEqual([
      { message_id: Number(first), text: '<i>ok</i>', parse_mode: 'HTML', edits: 0 },
      { message_id: Number(second), text: '_broken', edits: 0 },
    ]);
    expect(fake.sent(CHAT)[0]!.reply_to_message_id).toBe(31);
  });

  it('remove deletes the message and tolerates one already gone', async () => {
    const keep = await surface.post(target, 'keep', 'turn:0');
    const drop = await surface.post(target, 'drop', 'turn:1');
    await surface.remove(target, drop);
    await expect(surface.remove(target, drop)).resolves.toBeUndefined();
    expect(fake.shown(CHAT)).toEqual(['keep']);
    expect(fake.deletions.map((d) => [d.message_id, d.outcome])).toEqual([
      [Number(drop), 'deleted'],
      [Number(drop), 'failed'],
    ]);
    fake.failNext('deleteMessage', { error_code: 400, description: "Bad Request: message can't be deleted" });
    expect((await refusal(surface.remove(target, keep))).code).toBe('DELIVERY_PERMANENT');
    expect(fake.shown(CHAT)).toEqual(['keep']);
  });
});
