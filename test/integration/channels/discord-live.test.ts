/**
 * DiscordLiveSurface against the fake Discord through the real discord.js REST
 * client: posts and edits change what the channel shows, a repeated post (same
 * key → same nonce) shows one message, a gone message is DELIVERY_PERMANENT,
 * 429s are waited out by REST (or, with rejectOnRateLimit, DELIVERY_TRANSIENT
 * with the wait), deletions tolerate a gone message.
 */
import { REST } from 'discord.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DiscordLiveSurface } from '../../../src/channels/discord/live.js';
import { discordParts } from '../../../src/channels/discord/sender.js';
import { AppError } from '../../../src/errors/index.js';
import { type FakeDiscord, startFakeDiscord } from '../../fakes/discord-server.js';
import { rejectedWith } from '../../fakes/rejection.js';

const TOKEN = 'test-token.discord.live';
const EDIT_ROUTE = 'PATCH /channels/:id/messages/:id';
const POST_ROUTE = 'POST /channels/:id/messages';

let fake: FakeDiscord;
let surface: DiscordLiveSurface;
const rests: REST[] = [];

function restFor(options: ConstructorParameters<typeof REST>[0] = {}): REST {
  const rest = new REST({ api: fake.apiRoot, ...options }).setToken(TOKEN);
  rests.push(rest);
  return rest;
}

const refusal = (promise: Promise<unknown>) => rejectedWith(AppError, promise);

beforeEach(async () => {
  fake = await startFakeDiscord({ token: TOKEN });
  surface = new DiscordLiveSurface({ rest: restFor() });
});
afterEach(async () => {
  for (const rest of rests.splice(0)) {
    rest.clearHashSweeper();
    rest.clearHandlerSweeper();
  }
  await fake.close();
});

describe('DiscordLiveSurface', () => {
  it('offers Discord limits: 2000 characters, one edit per second unless told otherwise', () => {
    expect(surface.limit).toBe(2000);
    expect(surface.editIntervalMs).toBe(1000);
    expect(new DiscordLiveSurface({ rest: restFor(), editIntervalMs: 1250 }).editIntervalMs).toBe(1250);
    expect(() => new DiscordLiveSurface({ rest: restFor(), editIntervalMs: Number.NaN })).toThrow(RangeError);
  });

  it('posts with a nonce, no mentions and a reply reference, and returns the message id', async () => {
    const channel = fake.textChannelId;
    const id = await surface.post({ chatId: channel, replyTo: '123456789' }, 'Hi @everyone', 'turn-1:0');
    const [sent] = fake.sent(channel);
    expect(id).toBe(sent!.id);
    expect(sent).toMatchObject({ content: 'Hi @everyone', messageReference: { message_id: '123456789' } });
    const body = fake.calls.find((c) => c.route === POST_ROUTE)!.body as Record<string, unknown>;
    expect(body).toMatchObject({
      enforce_nonce: true,
      allowed_mentions: { parse: [], replied_user: false },
    });
    expect(typeof body['nonce']).toBe('string');
    expect((body['nonce'] as string).length).toBeLessThanOrEqual(25);
  });

  it('a post repeated with the same key shows one message; another key is another message', async () => {
    const channel = fake.textChannelId;
    const first = await surface.post({ chatId: channel }, 'Working…', 'turn-1:0');
    const again = await surface.post({ chatId: channel }, 'Working… (redone)', 'turn-1:0');
    expect(again).toBe(first);
    expect(fake.shown(channel)).toEqual(['Working…']);
    const other = await surface.post({ chatId: channel }, 'Second part', 'turn-1:1');
    expect(other).not.toBe(first);
    expect(fake.shown(channel)).toEqual(['Working…', 'Second part']);
    expect(fake.calls.filter((c) => c.route === POST_ROUTE)).toHaveLength(3);
  });

  it('goes to the thread when the target has one', async () => {
    await surface.post({ chatId: fake.textChannelId, threadId: fake.threadId }, 'in thread', 'turn-2:0');
    expect(fake.shown(fake.threadId)).toEqual(['in thread']);
    expect(fake.shown(fake.textChannelId)).toEqual([]);
  });

  it('post then edits change what the channel shows, in place; editFinal passes Markdown through', async () => {
    const target = { chatId: fake.textChannelId };
    const id = await surface.post(target, 'The answer', 'turn-3:0');
    await surface.edit(target, id, 'The answer grows');
    await surface.editFinal(target, id, 'The answer, **final**');
    expect(fake.shown(fake.textChannelId)).toEqual(['The answer, **final**']);
    expect(fake.shownMessages(fake.textChannelId)[0]).toMatchObject({ id, edits: 2 });
    expect(fake.edits.map((e) => [e.messageId, e.outcome])).toEqual([
      [id, 'edited'],
      [id, 'edited'],
    ]);
    expect(fake.sent(fake.textChannelId)).toHaveLength(1);
  });

  it('an edit to the same text resolves', async () => {
    const target = { chatId: fake.textChannelId };
    const id = await surface.post(target, 'same', 'turn-4:0');
    await expect(surface.edit(target, id, 'same')).resolves.toBeUndefined();
    expect(fake.shown(fake.textChannelId)).toEqual(['same']);
  });

  it('an edit of a deleted or unknown message is DELIVERY_PERMANENT (10008)', async () => {
    const target = { chatId: fake.textChannelId };
    const id = await surface.post(target, 'soon gone', 'turn-5:0');
    await surface.remove(target, id);
    const gone = await refusal(surface.edit(target, id, 'more'));
    expect(gone.code).toBe('DELIVERY_PERMANENT');
    expect(gone.message).toMatch(/10008/);
    expect((await refusal(surface.editFinal(target, fake.newId(), 'x'))).code).toBe('DELIVERY_PERMANENT');
    // A message of another channel is unknown here too.
    const elsewhere = await surface.post({ chatId: fake.threadId }, 'thread msg', 'turn-5:1');
    expect((await refusal(surface.edit(target, elsewhere, 'hijack'))).code).toBe('DELIVERY_PERMANENT');
    expect(fake.shown(fake.threadId)).toEqual(['thread msg']);
  });

  it('an edit over 2000 characters is refused for good and changes nothing', async () => {
    const target = { chatId: fake.textChannelId };
    const id = await surface.post(target, 'short', 'turn-6:0');
    expect((await refusal(surface.edit(target, id, 'x'.repeat(2001)))).code).toBe('DELIVERY_PERMANENT');
    expect(fake.shown(fake.textChannelId)).toEqual(['short']);
  });

  it('REST waits out a short 429 on an edit and the edit lands', async () => {
    const target = { chatId: fake.textChannelId };
    const id = await surface.post(target, 'a', 'turn-7:0');
    fake.failEdits(1, 'rate_limited');
    await surface.edit(target, id, 'ab');
    expect(fake.edits.map((e) => e.status)).toEqual([429, 200]);
    expect(fake.shown(fake.textChannelId)).toEqual(['ab']);
  });

  it('an edit the platform answers with 10008 (message gone meanwhile) is DELIVERY_PERMANENT', async () => {
    const target = { chatId: fake.textChannelId };
    const id = await surface.post(target, 'a', 'turn-7b:0');
    fake.failEdits(1, 'unknown_message');
    const gone = await refusal(surface.editFinal(target, id, 'final'));
    expect([gone.code, gone.transient]).toEqual(['DELIVERY_PERMANENT', false]);
    expect(fake.edits.map((e) => [e.outcome, e.status])).toEqual([['failed', 404]]);
    expect(fake.shown(fake.textChannelId)).toEqual(['a']);
  });

  it('with rejectOnRateLimit a 429 is DELIVERY_TRANSIENT carrying its wait', async () => {
    const rejecting = new DiscordLiveSurface({ rest: restFor({ rejectOnRateLimit: () => true }) });
    const target = { chatId: fake.textChannelId };
    const id = await rejecting.post(target, 'a', 'turn-8:0');
    fake.failNext(EDIT_ROUTE, {
      status: 429,
      body: { message: 'You are being rate limited.', retry_after: 4 },
    });
    const started = Date.now();
    const limited = await refusal(rejecting.edit(target, id, 'ab'));
    expect(Date.now() - started).toBeLessThan(2000);
    expect(limited.code).toBe('DELIVERY_TRANSIENT');
    expect(limited.transient).toBe(true);
    expect(limited.retryAfterMs).toBeGreaterThanOrEqual(4000);
    expect(fake.shown(fake.textChannelId)).toEqual(['a']);
  });

  it('a missing permission on a post is DELIVERY_PERMANENT', async () => {
    fake.failNext(POST_ROUTE, { status: 403, body: { message: 'Missing Permissions', code: 50013 } });
    const refused = await refusal(surface.post({ chatId: fake.textChannelId }, 'hi', 'turn-9:0'));
    expect(refused.code).toBe('DELIVERY_PERMANENT');
    expect(fake.shown(fake.textChannelId)).toEqual([]);
  });

  it('finalParts are the channel send parts; postFinal posts one with its own nonce', async () => {
    const long = `${'word '.repeat(500)}\n\n\`\`\`ts\n${'const x = 1;\n'.repeat(100)}\`\`\``;
    const parts = surface.finalParts(long);
    expect(parts).toEqual(discordParts(long));
    expect(parts.length).toBeGreaterThan(1);
    const target = { chatId: fake.textChannelId };
    const ids = [];
    for (const [i, part] of parts.entries()) ids.push(await surface.postFinal(target, part, `final:${i}`));
    expect(await surface.postFinal(target, parts[0]!, 'final:0')).toBe(ids[0]);
    expect(fake.shown(fake.textChannelId)).toEqual(parts);
  });

  it('remove deletes the message and tolerates one already gone', async () => {
    const target = { chatId: fake.textChannelId };
    const keep = await surface.post(target, 'keep', 'turn-10:0');
    const drop = await surface.post(target, 'drop', 'turn-10:1');
    await surface.remove(target, drop);
    await expect(surface.remove(target, drop)).resolves.toBeUndefined();
    expect(fake.shown(fake.textChannelId)).toEqual(['keep']);
    expect(fake.deletions.map((d) => [d.messageId, d.status])).toEqual([
      [drop, 204],
      [drop, 404],
    ]);
    fake.failNext('DELETE /channels/:id/messages/:id', {
      status: 403,
      body: { message: 'Missing Permissions', code: 50013 },
    });
    expect((await refusal(surface.remove(target, keep))).code).toBe('DELIVERY_PERMANENT');
    expect(fake.shown(fake.textChannelId)).toEqual(['keep']);
  });

  it('refuses a message id that is not a snowflake without calling the API', async () => {
    const target = { chatId: fake.textChannelId };
    for (const bad of ['', 'abc', '../../guilds/1', '12/reactions', '1'.repeat(21)]) {
      expect((await refusal(surface.edit(target, bad, 'x'))).code).toBe('DELIVERY_PERMANENT');
      expect((await refusal(surface.remove(target, bad))).code).toBe('DELIVERY_PERMANENT');
    }
    expect(fake.calls).toHaveLength(0);
  });
});
