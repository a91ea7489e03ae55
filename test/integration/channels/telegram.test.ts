/**
 * The Telegram adapter against the fake Bot API with the real telegraf client
 * and real Redis (access/pairing). The bus is a small recording ChannelBus; an
 * "echo agent" answers through channel.send, as the gateway's delivery would.
 */

import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { approvePairing, RedisPairingStore } from '../../../src/bus/pairing-store.js';
import { MAX_REPLY_PARTS } from '../../../src/channels/chunk.js';
import { TelegramChannel, type TelegramChannelOptions } from '../../../src/channels/telegram/index.js';
import type { ChannelBus } from '../../../src/channels/types.js';
import { COMMANDS } from '../../../src/commands/list.js';
import { AppError, ConfigError } from '../../../src/errors/index.js';
import { createLogger, silentLogger } from '../../../src/log/index.js';
import type { AnswerOutcome, ApprovalAnswer } from '../../../src/messages/approval.js';
import {
  type InboundMessage,
  type InboundMessageInput,
  InboundMessageSchema,
  OutboundMessageSchema,
} from '../../../src/messages/messages.js';
import {
  dmUpdate,
  type FakeTelegram,
  groupUpdate,
  mentioning,
  startFakeTelegram,
} from '../../fakes/telegram-server.js';

/** A ChannelBus that records messages; `failures` makes the next publishes reject (Redis away). */
class RecordingBus implements ChannelBus {
  readonly published: InboundMessage[] = [];
  readonly cancelled: string[] = [];
  failures = 0;
  onPublish: ((m: InboundMessage) => void) | undefined;
  async publishInbound(input: InboundMessageInput): Promise<void> {
    if (this.failures > 0) {
      this.failures--;
      throw new AppError('REDIS_UNAVAILABLE', 'Redis is away', { transient: true });
    }
    const message = InboundMessageSchema.parse(input);
    this.published.push(message);
    this.onPublish?.(message);
  }
  async cancel(sessionKey: string): Promise<boolean> {
    this.cancelled.push(sessionKey);
    return true;
  }

  readonly answers: Array<{ sessionKey: string; answer: ApprovalAnswer }> = [];
  /** Records the answer; no question waits on this bus. */
  async answerApproval(sessionKey: string, answer: ApprovalAnswer): Promise<AnswerOutcome> {
    this.answers.push({ sessionKey, answer });
    return { kind: 'none' };
  }
}

let redis: Redis;
const cleanups: Array<() => Promise<void>> = [];
beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
});
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});
afterAll(async () => {
  await redis.quit();
});

const FAST: TelegramChannelOptions = { pollTimeoutSeconds: 1, typingIntervalMs: 100, retryDelayMs: 50 };

async function setup(
  options: { allowFrom?: string; echo?: boolean; fake?: FakeTelegram; maxBytes?: number } = {},
) {
  const fake = options.fake ?? (await startFakeTelegram({ token: '4242:secret-token' }));
  if (!options.fake) cleanups.push(() => fake.close());
  const prefix = `test-${randomUUID()}`;
  const config = parseConfig({
    TELEGRAM_BOT_TOKEN: fake.token,
    TELEGRAM_API_ROOT: fake.apiRoot,
    TELEGRAM_ALLOW_FROM: options.allowFrom ?? '*',
    MAGPIE_QUEUE_PREFIX: prefix,
    MAGPIE_MAX_MEDIA_BYTES: String(options.maxBytes ?? 1024 * 1024),
  });
  const bus = new RecordingBus();
  const channel = new TelegramChannel(
    {
      config,
      bus,
      logger: process.env.DEBUG_TG ? createLogger({ level: 'debug' }) : silentLogger(),
      pairing: new RedisPairingStore(redis, prefix),
    },
    FAST,
  );
  if (options.echo !== false) {
    bus.onPublish = (m) => {
      void channel.send(
        OutboundMessageSchema.parse({
          id: `r-${m.id}`,
          channel: 'telegram',
          chatId: m.chatId,
          threadId: m.threadId,
          content: `echo: **${m.content}**`,
        }),
      );
    };
  }
  return { fake, bus, channel, prefix, config };
}

async function started(options: Parameters<typeof setup>[0] = {}) {
  const s = await setup(options);
  await s.channel.start();
  cleanups.push(() => s.channel.stop());
  return s;
}

const alice = { id: 111, first_name: 'Alice', username: 'alice' };

describe('Telegram channel', () => {
  it('answers a DM with HTML-formatted text and registers its commands', async () => {
    const { fake, bus } = await started();
    fake.pushUpdate(dmUpdate(alice, 'hello'));
    await fake.waitFor(() => fake.sent(111).length === 1);
    expect(fake.sent(111)[0]).toMatchObject({ text: 'echo: <b>hello</b>', parse_mode: 'HTML' });
    expect(bus.published[0]).toMatchObject({
      channel: 'telegram',
      chatId: '111',
      senderId: '111',
      senderName: 'Alice',
      content: 'hello',
      isGroup: false,
    });
    const commands = fake.calls.find((c) => c.method === 'setMyCommands')?.params.commands as Array<{
      command: string;
    }>;
    expect(commands.map((c) => c.command)).toEqual(COMMANDS.map((c) => c.command));
    expect(commands.map((c) => c.command)).toContain('model');
  });

  it('splits a 6000-character reply with a code block into valid parts under 4096', async () => {
    const { fake, channel } = await started({ echo: false });
    const prose = Array.from({ length: 20 }, (_, i) => `Paragraph ${i}: ${'text '.repeat(25)}`).join('\n\n');
    const code = Array.from({ length: 100 }, (_, i) => `x${i} = compute(${i}) if ${i} < 5 else None`).join(
      '\n',
    );
    const content = `${prose}\n\n\`\`\`python\n${code}\n\`\`\``;
    expect(content.length).toBeGreaterThan(6000);
    await channel.send(
      OutboundMessageSchema.parse({ id: 'long-1', channel: 'telegram', chatId: '111', content }),
    );
    const sent = fake.sent(111);
    expect(sent.length).toBeGreaterThan(1);
    for (const m of sent) {
      expect(m.parse_mode).toBe('HTML'); // the fake rejects unbalanced or unknown tags
      expect(m.text.length).toBeLessThan(4096);
    }
    const codeParts = sent.filter((m) => m.text.includes('compute('));
    expect(codeParts.length).toBeGreaterThan(1);
    for (const m of codeParts) expect(m.text).toContain('<pre><code class="language-python">');
    expect(sent[0]!.text.startsWith('Paragraph 0')).toBe(true);
    expect(sent.at(-1)!.text).toContain('x99 = compute(99)');
  });

  it('sends 4,500 backticks and 5,000 tildes in two parts each, and cuts a huge reply at 10 parts', async () => {
    // Before fence runs this long were text, these took 1,002 and 1,502 messages.
    const { fake, channel } = await started({ echo: false });
    const send = (id: string, content: string) =>
      channel.send(OutboundMessageSchema.parse({ id, channel: 'telegram', chatId: '111', content }));
    await send('ticks', '`'.repeat(4500));
    expect(fake.sent(111).length).toBeLessThanOrEqual(3);
    const afterTicks = fake.sent(111).length;
    await send('tildes', '~'.repeat(5000));
    expect(fake.sent(111).length - afterTicks).toBeLessThanOrEqual(3);
    const before = fake.sent(111).length;
    const huge = Array.from({ length: 2000 }, (_, i) => `line ${i}: ${'word '.repeat(10)}`).join('\n');
    await send('huge', huge);
    const parts = fake.sent(111).slice(before);
    expect(parts).toHaveLength(MAX_REPLY_PARTS);
    expect(parts.at(-1)!.text).toMatch(
      /^\[Reply cut: it was [\d,]+ characters, \d+ messages long; only the first 9 were sent\.\]$/,
    );
  });

  it('ignores a group message without a mention and answers one with it, mention stripped', async () => {
    const { fake, bus } = await started();
    const bob = { id: 222, first_name: 'Bob', last_name: 'Stone' };
    fake.pushUpdate(groupUpdate(-100500, bob, 'talking among ourselves'));
    fake.pushUpdate(groupUpdate(-100500, bob, 'ignored', { ...mentioning('someone_else', 'hi') }));
    fake.pushUpdate(groupUpdate(-100500, bob, '', { ...mentioning(fake.bot.username, 'what time is it?') }));
    await fake.waitFor(() => fake.sent(-100500).length === 1);
    expect(bus.published).toHaveLength(1);
    expect(bus.published[0]).toMatchObject({
      chatId: '-100500',
      content: 'what time is it?',
      isGroup: true,
      senderName: 'Bob Stone',
    });
  });

  it('answers a reply to its own message in a group, and keeps forum topics as separate sessions', async () => {
    const { fake, bus } = await started();
    const bob = { id: 222, first_name: 'Bob' };
    fake.pushUpdate(
      groupUpdate(-100600, bob, 'and tomorrow?', {
        reply_to_message: { message_id: 5, from: { id: fake.bot.id, is_bot: true, first_name: 'Magpie' } },
        message_thread_id: 77,
        is_topic_message: true,
      }),
    );
    await fake.waitFor(() => fake.sent(-100600).length === 1);
    expect(bus.published[0]).toMatchObject({ content: 'and tomorrow?', threadId: '77' });
    expect(fake.sent(-100600)[0]!.message_thread_id).toBe(77);
  });

  it('gives an unknown DM sender only a pairing code, and answers after approval', async () => {
    const { fake, bus, prefix } = await started({ allowFrom: '@someone' });
    const stranger = { id: 333, first_name: 'Sam', username: 'sam' };
    fake.pushUpdate(dmUpdate(stranger, 'hi there'));
    await fake.waitFor(() => fake.sent(333).length === 1);
    const text = fake.sent(333)[0]!.text;
    const code = /approve ([A-Z2-9]{6})$/.exec(text)?.[1];
    expect(text).toBe(`Hi! I don't know you yet. Ask my owner to run: npx magpie pairing approve ${code}`);
    expect(bus.published).toHaveLength(0);

    expect(await approvePairing(redis, prefix, code!)).toMatchObject({ senderId: '333', username: 'sam' });
    fake.pushUpdate(dmUpdate(stranger, 'hello again'));
    await fake.waitFor(() => fake.sent(333).length === 2);
    expect(fake.sent(333)[1]!.text).toBe('echo: <b>hello again</b>');
  });

  it('sends a stranger who keeps writing their code once, not once per message', async () => {
    const { fake, bus, prefix } = await started({ allowFrom: '@someone' });
    const stranger = { id: 334, first_name: 'Pat', username: 'pat' };
    for (const text of ['hi', 'hello?', 'anyone there?']) fake.pushUpdate(dmUpdate(stranger, text));
    // The poller confirms updates only after handling them: all three handled, one code sent.
    await fake.waitFor(() => fake.pendingUpdates() === 0 && fake.sent(334).length >= 1);
    expect(fake.sent(334)).toHaveLength(1);
    const code = /approve ([A-Z2-9]{6})$/.exec(fake.sent(334)[0]!.text)?.[1];
    expect(await approvePairing(redis, prefix, code!)).toMatchObject({ senderId: '334' });
    fake.pushUpdate(dmUpdate(stranger, 'now?'));
    await fake.waitFor(() => bus.published.length === 1);
    expect(bus.published[0]).toMatchObject({ content: 'now?' });
    expect(fake.sent(334).map((m) => m.text)).toEqual([
      `Hi! I don't know you yet. Ask my owner to run: npx magpie pairing approve ${code}`,
      'echo: <b>now?</b>',
    ]);
  });

  it('ignores unknown senders in groups silently and never downloads their files', async () => {
    const { fake, bus } = await started({ allowFrom: '111' });
    fake.addFile('photo-x', new Uint8Array([1, 2, 3]));
    fake.pushUpdate(
      groupUpdate(-100700, { id: 444, first_name: 'Eve' }, '', {
        ...mentioning(fake.bot.username, 'look'),
        photo: [{ file_id: 'photo-x', file_unique_id: 'u', width: 10, height: 10, file_size: 3 }],
      }),
    );
    fake.pushUpdate(groupUpdate(-100700, alice, '', { ...mentioning(fake.bot.username, 'me too') }));
    await fake.waitFor(() => fake.sent(-100700).length === 1);
    expect(bus.published.map((m) => m.senderId)).toEqual(['111']);
    expect(fake.calls.some((c) => c.method === 'getFile' || c.method === 'download')).toBe(false);
  });

  it('waits for retry_after on 429 and delivers exactly once', async () => {
    const { fake, channel } = await started({ echo: false });
    fake.failNext('sendMessage', {
      error_code: 429,
      description: 'Too Many Requests: retry after 1',
      parameters: { retry_after: 1 },
    });
    const t0 = Date.now();
    await channel.send(
      OutboundMessageSchema.parse({ id: 'x', channel: 'telegram', chatId: '111', content: 'hi' }),
    );
    expect(Date.now() - t0).toBeGreaterThanOrEqual(950);
    expect(fake.calls.filter((c) => c.method === 'sendMessage')).toHaveLength(2);
    expect(fake.sent(111).map((m) => m.text)).toEqual(['hi']);
  });

  it('sends the same part as plain text when Telegram rejects the HTML', async () => {
    const { fake, channel } = await started({ echo: false });
    fake.failNext('sendMessage', {
      error_code: 400,
      description: 'Bad Request: can\'t parse entities: Unsupported start tag "b" at byte offset 0',
    });
    await channel.send(
      OutboundMessageSchema.parse({ id: 'y', channel: 'telegram', chatId: '111', content: '**bold** claim' }),
    );
    expect(fake.sent(111)).toEqual([expect.objectContaining({ text: '**bold** claim' })]);
    expect(fake.sent(111)[0]!.parse_mode).toBeUndefined();
  });

  it('throws DELIVERY_PERMANENT when the bot was blocked, without retrying', async () => {
    const { fake, channel } = await started({ echo: false });
    fake.failNext('sendMessage', { error_code: 403, description: 'Forbidden: bot was blocked by the user' });
    const error = await channel
      .send(OutboundMessageSchema.parse({ id: 'z', channel: 'telegram', chatId: '111', content: 'hi' }))
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('DELIVERY_PERMANENT');
    expect(fake.calls.filter((c) => c.method === 'sendMessage')).toHaveLength(1);
  });

  it('answers updates sent while it was stopped, once each, in order', async () => {
    const fake = await startFakeTelegram({ token: '4242:secret-token' });
    cleanups.push(() => fake.close());
    const first = await setup({ fake });
    await first.channel.start();
    fake.pushUpdate(dmUpdate(alice, 'one'));
    await fake.waitFor(() => fake.sent(111).length === 1);
    await first.channel.stop();

    fake.pushUpdate(dmUpdate(alice, 'two'));
    fake.pushUpdate(dmUpdate(alice, 'three'));
    const second = await setup({ fake });
    await second.channel.start();
    cleanups.push(() => second.channel.stop());
    await fake.waitFor(() => fake.sent(111).length === 3);
    expect(second.bus.published.map((m) => m.content)).toEqual(['two', 'three']);
    expect(fake.sent(111).map((m) => m.text)).toEqual([
      'echo: <b>one</b>',
      'echo: <b>two</b>',
      'echo: <b>three</b>',
    ]);
  });

  it('retries an update while the bus is away instead of skipping it', async () => {
    const { fake, bus } = await started();
    bus.failures = 3;
    fake.pushUpdate(dmUpdate(alice, 'important'));
    fake.pushUpdate(dmUpdate(alice, 'next'));
    await fake.waitFor(() => fake.sent(111).length === 2);
    expect(bus.published.map((m) => m.content)).toEqual(['important', 'next']);
    expect(bus.failures).toBe(0);
  });

  it('shows typing every interval until the reply is delivered', async () => {
    const { fake, channel } = await started({ echo: false });
    const actions = (chat: string) =>
      fake.calls.filter((c) => c.method === 'sendChatAction' && String(c.params.chat_id) === chat);
    channel.startActivity('111');
    await fake.waitFor(() => actions('111').length >= 3);
    expect(actions('111')[0]!.params.action).toBe('typing');
    await channel.send(
      OutboundMessageSchema.parse({ id: 't', channel: 'telegram', chatId: '111', content: 'done' }),
    );
    const after = actions('111').length;
    // Another chat types for a few intervals: the first one must have stopped meanwhile.
    channel.startActivity('222');
    await fake.waitFor(() => actions('222').length >= 4);
    channel.stopActivity('222');
    expect(actions('111').length).toBe(after);
  });

  it('never lets a failing typing call break a reply', async () => {
    const { fake, channel } = await started({ echo: false });
    fake.failNext('sendChatAction', { error_code: 500, description: 'Internal Server Error' }, 5);
    channel.startActivity('111');
    await fake.waitFor(() => fake.calls.filter((c) => c.method === 'sendChatAction').length >= 2);
    await channel.send(
      OutboundMessageSchema.parse({ id: 'u', channel: 'telegram', chatId: '111', content: 'ok' }),
    );
    expect(fake.sent(111).map((m) => m.text)).toEqual(['ok']);
  });

  it('handles /stop (also /stop@bot in a group) by cancelling the session', async () => {
    const { fake, bus } = await started();
    fake.pushUpdate(dmUpdate(alice, '/stop'));
    await fake.waitFor(() => fake.sent(111).length === 1);
    expect(fake.sent(111)[0]!.text).toBe('Stopping.');
    fake.pushUpdate(
      groupUpdate(-100800, alice, `/stop@${fake.bot.username}`, {
        entities: [{ type: 'bot_command', offset: 0, length: 5 + fake.bot.username.length + 1 }],
      }),
    );
    await fake.waitFor(() => fake.sent(-100800).length === 1);
    expect(bus.cancelled).toEqual(['telegram:111', 'telegram:-100800']);
    expect(bus.published).toHaveLength(0);
  });

  it('forwards /new, /status and /help with the @bot suffix removed', async () => {
    const { fake, bus } = await started({ echo: false });
    fake.pushUpdate(dmUpdate(alice, '/new'));
    fake.pushUpdate(groupUpdate(-100900, alice, `/status@${fake.bot.username}`));
    fake.pushUpdate(groupUpdate(-100900, alice, '/help@other_bot'));
    fake.pushUpdate(groupUpdate(-100900, alice, '/help'));
    await fake.waitFor(() => bus.published.length === 3);
    expect(bus.published.map((m) => m.content)).toEqual(['/new', '/status', '/help']);
  });

  it('downloads a photo as an image data URL and describes an oversized one', async () => {
    const { fake, bus } = await started({ echo: false, maxBytes: 1000 });
    const bytes = new Uint8Array(600).map((_, i) => i % 251);
    fake.addFile('big', new Uint8Array(5000));
    fake.addFile('mid', bytes);
    fake.pushUpdate(
      dmUpdate(alice, '', {
        text: undefined,
        caption: 'what is this?',
        photo: [
          { file_id: 'mid', file_unique_id: 'a', width: 320, height: 240, file_size: 600 },
          { file_id: 'big', file_unique_id: 'b', width: 1280, height: 960, file_size: 5000 },
        ],
      }),
    );
    fake.pushUpdate(
      dmUpdate(alice, '', {
        text: undefined,
        photo: [{ file_id: 'big', file_unique_id: 'b', width: 1280, height: 960, file_size: 5000 }],
      }),
    );
    await fake.waitFor(() => bus.published.length === 2);
    const [withPhoto, tooBig] = bus.published;
    expect(withPhoto!.content).toBe('what is this?');
    expect(withPhoto!.media[0]).toMatchObject({ kind: 'image', mimeType: 'image/jpeg', size: 600 });
    expect(withPhoto!.media[0]!.dataUrl).toBe(
      `data:image/jpeg;base64,${Buffer.from(bytes).toString('base64')}`,
    );
    expect(tooBig!.media[0]).toMatchObject({ kind: 'image', note: expect.stringContaining('too large') });
    expect(tooBig!.media[0]!.dataUrl).toBeUndefined();
    expect(fake.calls.filter((c) => c.method === 'download')).toHaveLength(1);
  });

  it('passes a voice note as audio and a document as a described file', async () => {
    const { fake, bus } = await started({ echo: false });
    fake.addFile('voice-1', new Uint8Array([79, 103, 103, 83]));
    fake.pushUpdate(
      dmUpdate(alice, '', {
        text: undefined,
        voice: { file_id: 'voice-1', duration: 2, mime_type: 'audio/ogg' },
      }),
    );
    fake.pushUpdate(
      dmUpdate(alice, '', {
        text: undefined,
        caption: 'see attached',
        document: {
          file_id: 'doc-1',
          file_name: 'report.pdf',
          mime_type: 'application/pdf',
          file_size: 2048,
        },
      }),
    );
    await fake.waitFor(() => bus.published.length === 2);
    expect(bus.published[0]!.media[0]).toMatchObject({
      kind: 'audio',
      mimeType: 'audio/ogg',
      dataUrl: 'data:audio/ogg;base64,T2dnUw==',
    });
    expect(bus.published[1]!.media[0]).toMatchObject({
      kind: 'file',
      name: 'report.pdf',
      mimeType: 'application/pdf',
      size: 2048,
      note: expect.stringContaining('report.pdf'),
    });
    expect(fake.calls.filter((c) => c.method === 'getFile').map((c) => c.params.file_id)).toEqual([
      'voice-1',
    ]);
  });

  it('refuses to start with a token Telegram rejects, in one clear line', async () => {
    const fake = await startFakeTelegram({ token: '1:right' });
    cleanups.push(() => fake.close());
    const config = parseConfig({ TELEGRAM_BOT_TOKEN: '1:wrong', TELEGRAM_API_ROOT: fake.apiRoot });
    const channel = new TelegramChannel(
      {
        config,
        bus: new RecordingBus(),
        logger: silentLogger(),
        pairing: new RedisPairingStore(redis, config.redis.prefix),
      },
      FAST,
    );
    const error = await channel.start().catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(
      'TELEGRAM_BOT_TOKEN was refused by Telegram (401 Unauthorized): check the token',
    );
    expect((error as Error).message).not.toContain('wrong');
  });

  it('starts even when command registration fails', async () => {
    const fake = await startFakeTelegram({ token: '4242:secret-token' });
    cleanups.push(() => fake.close());
    fake.failNext('setMyCommands', { error_code: 500, description: 'Internal Server Error' });
    await started({ fake });
    fake.pushUpdate(dmUpdate(alice, 'still here'));
    await fake.waitFor(() => fake.sent(111).length === 1);
  });
});
