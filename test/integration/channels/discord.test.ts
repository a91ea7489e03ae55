/** The Discord adapter against a fake Discord (real discord.js client, real Redis for access). */

import { Redis } from 'ioredis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { approvePairing, RedisPairingStore } from '../../../src/bus/pairing-store.js';
import { DiscordChannel } from '../../../src/channels/discord/index.js';
import { AppError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { startFakeDiscord } from '../../fakes/discord-server.js';
import { waitFor } from '../../fakes/wait-for.js';
import { type Harness, RecordingBus, startHarness } from './discord-harness.js';

const redisUrl = inject('redisUrl');
let harness: Harness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

function reply(chatId: string, content: string, extra: Record<string, unknown> = {}) {
  return {
    id: `r-${Math.random().toString(36).slice(2)}`,
    channel: 'discord',
    chatId,
    content,
    kind: 'reply' as const,
    createdAt: new Date().toISOString(),
    metadata: {},
    ...extra,
  };
}

describe('discord channel', () => {
  it('publishes a DM from an allowed user and delivers the reply to the DM channel', async () => {
    const bus = new RecordingBus();
    harness = await startHarness({ redisUrl, bus });
    await harness.channel.start();
    const { fake, owner } = harness;
    const dm = fake.newId();
    const messageId = fake.dispatchMessage({ channelId: dm, author: owner, content: 'hello magpie' });
    await waitFor(() => bus.published.length === 1);
    expect(bus.published[0]).toMatchObject({
      id: `discord:${dm}:${messageId}`,
      channel: 'discord',
      chatId: dm,
      senderId: owner.id,
      senderName: 'The Owner',
      content: 'hello magpie',
      isGroup: false,
      platformMessageId: messageId,
      media: [],
    });
    expect(bus.published[0]!.threadId).toBeUndefined();

    await harness.channel.send(reply(dm, 'Hi **there**!', { replyTo: messageId }));
    expect(fake.sent(dm).map((m) => m.content)).toEqual(['Hi **there**!']);
    expect(fake.sent(dm)[0]!.messageReference?.message_id).toBe(messageId);
  });

  it('splits a 6,000-character reply with a code block into ordered parts under 2000 with fences balanced', async () => {
    harness = await startHarness({ redisUrl, bus: new RecordingBus() });
    await harness.channel.start();
    const dm = harness.fake.newId();
    const prose = Array.from({ length: 10 }, (_, i) => `Paragraph ${i}. ${'Some words here. '.repeat(12)}`);
    const code = Array.from({ length: 110 }, (_, i) => `def f${i}(x):  return x * ${i}  # line ${i}`).join(
      '\n',
    );
    const content = `${prose.slice(0, 5).join('\n\n')}\n\n\`\`\`python\n${code}\n\`\`\`\n\n${prose.slice(5).join('\n\n')}`;
    expect(content.length).toBeGreaterThan(6000);
    await harness.channel.send(reply(dm, content));
    const parts = harness.fake.sent(dm).map((m) => m.content);
    expect(parts.length).toBeGreaterThanOrEqual(4);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(2000);
      expect(part.split('\n').filter((l) => l.startsWith('```')).length % 2).toBe(0);
    }
    expect(parts.filter((p) => p.startsWith('```python\n')).length).toBeGreaterThanOrEqual(2);
    // In order: the code lines read back exactly as written.
    const codeLines = parts
      .join('\n')
      .split('\n')
      .filter((l) => l.startsWith('def f'));
    expect(codeLines).toEqual(code.split('\n'));
    expect(parts[0]!.startsWith('Paragraph 0.')).toBe(true);
    expect(parts.at(-1)!.trimEnd().endsWith(prose[9]!.trimEnd())).toBe(true);
  });

  it('ignores a server message without a mention and answers one with a mention, mention stripped', async () => {
    const bus = new RecordingBus();
    harness = await startHarness({ redisUrl, bus });
    await harness.channel.start();
    const { fake, owner } = harness;
    const bot = { id: fake.botUserId, username: fake.botUsername, bot: true };
    fake.dispatchMessage({
      channelId: fake.textChannelId,
      guildId: fake.guildId,
      author: owner,
      content: 'just chatting',
    });
    const addressed = fake.dispatchMessage({
      channelId: fake.textChannelId,
      guildId: fake.guildId,
      author: owner,
      nick: 'Boss',
      content: `<@${fake.botUserId}> what is 2+2?`,
      mentions: [bot],
    });
    await waitFor(() => bus.published.length >= 1);
    expect(bus.published).toHaveLength(1);
    expect(bus.published[0]).toMatchObject({
      chatId: fake.textChannelId,
      content: 'what is 2+2?',
      isGroup: true,
      senderName: 'Boss',
      platformMessageId: addressed,
      metadata: { guildId: fake.guildId },
    });

    // A reply to one of the bot's messages counts as addressed, in a thread its own session.
    fake.dispatchMessage({
      channelId: fake.threadId,
      guildId: fake.guildId,
      author: owner,
      content: 'and times 3?',
      referencedMessage: { id: fake.newId(), author: bot, content: '4' },
    });
    await waitFor(() => bus.published.length === 2);
    expect(bus.published[1]).toMatchObject({
      chatId: fake.textChannelId,
      threadId: fake.threadId,
      content: 'and times 3?',
    });

    // The nickname mention form, mid-sentence, is stripped too.
    fake.dispatchMessage({
      channelId: fake.textChannelId,
      guildId: fake.guildId,
      author: owner,
      content: `hey <@!${fake.botUserId}> there`,
      mentions: [bot],
    });
    await waitFor(() => bus.published.length === 3);
    expect(bus.published[2]).toMatchObject({ content: 'hey there', senderName: 'The Owner' });

    await harness.channel.send(reply(fake.textChannelId, 'in the thread', { threadId: fake.threadId }));
    expect(fake.sent(fake.threadId).map((m) => m.content)).toEqual(['in the thread']);
    expect(fake.sent(fake.textChannelId)).toEqual([]);
  });

  it('gives an unknown DM sender a pairing code only, answers after approval, ignores unknown senders in servers', async () => {
    const bus = new RecordingBus();
    harness = await startHarness({ redisUrl, bus });
    await harness.channel.start();
    const { fake } = harness;
    const stranger = { id: fake.newId(), username: 'stranger', global_name: 'Stranger' };
    const dm = fake.newId();
    const photo = fake.addAttachment('me.png', 'image/png', Buffer.from('png'));
    fake.dispatchMessage({
      channelId: dm,
      author: stranger,
      content: 'hi, who are you?',
      attachments: [photo],
    });
    await waitFor(() => fake.sent(dm).length === 1);
    const text = fake.sent(dm)[0]!.content;
    const code = /approve ([A-Z2-9]{6})/.exec(text)?.[1];
    expect(code).toBeDefined();
    expect(bus.published).toEqual([]);
    expect(fake.calls.some((c) => c.route === 'GET /attachments')).toBe(false);

    // In a server, the unknown sender gets nothing at all, even when mentioning the bot.
    fake.dispatchMessage({
      channelId: fake.textChannelId,
      guildId: fake.guildId,
      author: stranger,
      content: `<@${fake.botUserId}> hello?`,
      mentions: [{ id: fake.botUserId, username: fake.botUsername, bot: true }],
    });

    const approved = await approvePairing(harness.redis, harness.prefix, code!.toLowerCase());
    expect(approved).toMatchObject({ channel: 'discord', senderId: stranger.id, chatId: dm });
    fake.dispatchMessage({ channelId: dm, author: stranger, content: 'me again' });
    await waitFor(() => bus.published.length === 1);
    expect(bus.published[0]).toMatchObject({ senderId: stranger.id, content: 'me again' });
    expect(fake.sent(fake.textChannelId)).toEqual([]);
    expect(fake.sent(dm)).toHaveLength(1);
  });

  it('sends a stranger who keeps writing their code once, not once per message', async () => {
    const bus = new RecordingBus();
    harness = await startHarness({ redisUrl, bus, allowFrom: () => ['@Friend'] });
    await harness.channel.start();
    const { fake } = harness;
    const stranger = { id: fake.newId(), username: 'pat' };
    const dm = fake.newId();
    for (const content of ['hi', 'hello?', 'anyone there?'])
      fake.dispatchMessage({ channelId: dm, author: stranger, content });
    // Messages are handled in arrival order: once the friend's is published, the stranger's three were handled.
    fake.dispatchMessage({
      channelId: fake.newId(),
      author: { id: fake.newId(), username: 'friend' },
      content: 'sentinel',
    });
    await waitFor(() => bus.published.length === 1);
    expect(bus.published[0]).toMatchObject({ content: 'sentinel' });
    expect(fake.sent(dm)).toHaveLength(1);
    expect(fake.sent(dm)[0]!.content).toMatch(/approve [A-Z2-9]{6}$/);
  });

  it('allows senders named by @username in the allow-list', async () => {
    const bus = new RecordingBus();
    harness = await startHarness({ redisUrl, bus, allowFrom: () => ['@Friend'] });
    await harness.channel.start();
    const dm = harness.fake.newId();
    harness.fake.dispatchMessage({
      channelId: dm,
      author: { id: harness.fake.newId(), username: 'friend' },
      content: 'hey',
    });
    await waitFor(() => bus.published.length === 1);
    expect(harness.fake.sent(dm)).toEqual([]);
  });

  it('delivers a part once after a 429 with retry_after', async () => {
    harness = await startHarness({ redisUrl, bus: new RecordingBus() });
    await harness.channel.start();
    const { fake } = harness;
    const dm = fake.newId();
    fake.failNext('POST /channels/:id/messages', { status: 429, body: { retry_after: 0.3, global: false } });
    const started = Date.now();
    await harness.channel.send(reply(dm, 'after the rate limit'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(fake.sent(dm).map((m) => m.content)).toEqual(['after the rate limit']);
    const posts = fake.calls.filter((c) => c.route === 'POST /channels/:id/messages');
    expect(posts.map((c) => c.status)).toEqual([429, 200]);
  });

  it('reports Missing Access and Cannot send messages as DELIVERY_PERMANENT, a 5xx as transient', async () => {
    harness = await startHarness({ redisUrl, bus: new RecordingBus() });
    await harness.channel.start();
    const { fake } = harness;
    const route = 'POST /channels/:id/messages';
    fake.failNext(route, { status: 403, body: { message: 'Missing Access', code: 50001 } });
    await expect(harness.channel.send(reply(fake.newId(), 'x'))).rejects.toMatchObject({
      code: 'DELIVERY_PERMANENT',
    });
    fake.failNext(route, {
      status: 403,
      body: { message: 'Cannot send messages to this user', code: 50007 },
    });
    await expect(harness.channel.send(reply(fake.newId(), 'x'))).rejects.toMatchObject({
      code: 'DELIVERY_PERMANENT',
    });
    fake.failNext(route, { status: 404, body: { message: 'Unknown Channel', code: 10003 } });
    await expect(harness.channel.send(reply(fake.newId(), 'x'))).rejects.toMatchObject({
      code: 'DELIVERY_PERMANENT',
    });
    for (let i = 0; i < 4; i++)
      fake.failNext(route, { status: 502, body: { message: 'Bad Gateway', code: 0 } });
    const err = await harness.channel.send(reply(fake.newId(), 'x')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'DELIVERY_TRANSIENT', transient: true });
  });

  it('resumes a multi-part send after a transient failure without posting a part twice', async () => {
    harness = await startHarness({ redisUrl, bus: new RecordingBus() });
    await harness.channel.start();
    const { fake } = harness;
    const dm = fake.newId();
    const content = `${'a'.repeat(1500)}\n\n${'b'.repeat(1500)}`;
    const message = reply(dm, content);
    await harness.channel.send(message); // warm-up: first part goes out, then fail the second next time
    expect(fake.sent(dm)).toHaveLength(2);
    const again = reply(dm, content);
    // First attempt: part 1 ok, part 2 fails transiently (4 × 500 exhausts discord.js's own retries).
    let calls = 0;
    const route = 'POST /channels/:id/messages';
    const before = fake.calls.length;
    const attempt = harness.channel.send(again);
    await fake.waitFor(() => fake.calls.slice(before).filter((c) => c.route === route).length >= 1);
    for (let i = 0; i < 4; i++) fake.failNext(route, { status: 500, body: { message: 'oops', code: 0 } });
    await expect(attempt).rejects.toMatchObject({ code: 'DELIVERY_TRANSIENT' });
    calls = fake.sent(dm).length;
    expect(calls).toBe(3);
    await harness.channel.send(again); // the outbound worker's retry
    expect(fake.sent(dm).map((m) => m.content[0])).toEqual(['a', 'b', 'a', 'b']);
  });

  it('shows typing during a turn and stops when the reply is delivered', async () => {
    harness = await startHarness({ redisUrl, bus: new RecordingBus() });
    await harness.channel.start();
    const { fake } = harness;
    const dm = fake.newId();
    const typing = () => fake.calls.filter((c) => c.path === `/channels/${dm}/typing`).length;
    harness.channel.startActivity(dm);
    await fake.waitFor(() => typing() >= 3);
    await harness.channel.send(reply(dm, 'done'));
    const after = typing();
    // Typing in another channel repeats one interval after it starts: typing that had not
    // stopped here would have repeated by then.
    const other = fake.newId();
    const otherTyping = () => fake.calls.filter((c) => c.path === `/channels/${other}/typing`).length;
    harness.channel.startActivity(other);
    await fake.waitFor(() => otherTyping() >= 2);
    harness.channel.stopActivity(other);
    expect(typing()).toBe(after);
    // A failing typing call breaks nothing.
    fake.failNext('POST /channels/:id/typing', { status: 500, body: { message: 'x', code: 0 } });
    harness.channel.startActivity(dm);
    harness.channel.stopActivity(dm);
    await harness.channel.send(reply(dm, 'still fine'));
    expect(fake.sent(dm).map((m) => m.content)).toEqual(['done', 'still fine']);
  });

  it('cancels the running turn on /stop and answers "Stopping."', async () => {
    const bus = new RecordingBus();
    harness = await startHarness({ redisUrl, bus });
    await harness.channel.start();
    const { fake, owner } = harness;
    const dm = fake.newId();
    fake.dispatchMessage({ channelId: dm, author: owner, content: '/stop' });
    await waitFor(() => fake.sent(dm).length === 1);
    expect(bus.cancelled).toEqual([`discord:${dm}`]);
    expect(fake.sent(dm)[0]!.content).toBe('Stopping.');
    fake.dispatchMessage({ channelId: dm, author: owner, content: '/new' });
    await waitFor(() => bus.published.length === 1);
    expect(bus.published[0]!.content).toBe('/new');
  });

  it('downloads image and audio attachments, describes other files and notes ones too large', async () => {
    const bus = new RecordingBus();
    harness = await startHarness({ redisUrl, bus });
    await harness.channel.start();
    const { fake, owner } = harness;
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
    const attachments = [
      fake.addAttachment('cat.png', 'image/png', png),
      fake.addAttachment('voice.ogg', 'audio/ogg', Buffer.from('OggS')),
      fake.addAttachment('report.pdf', 'application/pdf', Buffer.alloc(500)),
      fake.addAttachment('huge.jpg', 'image/jpeg', Buffer.alloc(2000)),
    ];
    fake.dispatchMessage({ channelId: fake.newId(), author: owner, content: 'look', attachments });
    await waitFor(() => bus.published.length === 1);
    const media = bus.published[0]!.media!;
    expect(media[0]).toMatchObject({
      kind: 'image',
      mimeType: 'image/png',
      dataUrl: `data:image/png;base64,${png.toString('base64')}`,
    });
    expect(media[1]).toMatchObject({ kind: 'audio', mimeType: 'audio/ogg' });
    expect(media[1]!.dataUrl).toMatch(/^data:audio\/ogg;base64,/);
    expect(media[2]).toMatchObject({
      kind: 'file',
      name: 'report.pdf',
      mimeType: 'application/pdf',
      size: 500,
    });
    expect(media[2]!.dataUrl).toBeUndefined();
    expect(media[3]!.dataUrl).toBeUndefined();
    expect(media[3]!.note).toMatch(/too large/);
    expect(fake.calls.filter((c) => c.route === 'GET /attachments')).toHaveLength(2);
  });

  it('keeps receiving after the gateway connection drops', async () => {
    const bus = new RecordingBus();
    harness = await startHarness({ redisUrl, bus });
    await harness.channel.start();
    const { fake, owner } = harness;
    const dm = fake.newId();
    fake.dispatchMessage({ channelId: dm, author: owner, content: 'before' });
    await waitFor(() => bus.published.length === 1);
    fake.dropConnections();
    await waitFor(() => {
      try {
        fake.dispatchMessage({ channelId: dm, author: owner, content: 'after' });
        return true;
      } catch {
        return false;
      }
    }, 20_000);
    await waitFor(() => bus.published.length === 2);
    expect(bus.published.map((m) => m.content)).toEqual(['before', 'after']);
  });

  it('rejects start() with a ConfigError naming DISCORD_BOT_TOKEN when the token is refused', async () => {
    const fake = await startFakeDiscord({ token: 'the-right-token' });
    const redis = new Redis(redisUrl);
    try {
      const config = parseConfig({ DISCORD_BOT_TOKEN: 'a-wrong-token', DISCORD_API_ROOT: fake.apiRoot });
      const channel = new DiscordChannel({
        config,
        bus: new RecordingBus(),
        logger: silentLogger(),
        pairing: new RedisPairingStore(redis, config.redis.prefix),
      });
      const err = await channel.start().catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'CONFIG_INVALID' });
      expect((err as Error).message).toMatch(/DISCORD_BOT_TOKEN was refused/);
      expect((err as Error).message).not.toContain('a-wrong-token');
      await channel.stop();
    } finally {
      redis.disconnect();
      await fake.close();
    }
  });
});
