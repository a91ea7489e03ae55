/**
 * The Signal adapter against the fake signal-cli daemon (JSON-RPC + SSE),
 * with real Redis for pairing: who is taken (allow list by number and by ACI,
 * a forged account, group mentions and quotes, malformed events), the event
 * stream reconnecting without loss or doubling, messages held while Redis is
 * away, attachments, replies with style ranges, and send errors classified.
 */

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { Bus } from '../../../src/bus/bus.js';
import { RedisPairingStore } from '../../../src/bus/pairing-store.js';
import { SignalChannel } from '../../../src/channels/signal/channel.js';
import { signalCheck } from '../../../src/channels/signal/doctor.js';
import type { ChannelBus } from '../../../src/channels/types.js';
import { AppError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { closedPort } from '../../fakes/net.js';
import { type RedisHandle, startRedis } from '../../fakes/redis-server.js';
import { type FakeSignalCli, type FakeSignalUser, startFakeSignalCli } from '../../fakes/signal-cli.js';
import { waitFor } from '../../fakes/wait-for.js';
import { RecordingBus } from './discord-harness.js';

const byNumber: FakeSignalUser = { uuid: randomUUID(), number: '+15551110001', name: 'Numbered' };
/** Allowed by ACI; Signal hides their number. */
const byAci: FakeSignalUser = { uuid: randomUUID(), name: 'Hidden' };
const stranger: FakeSignalUser = { uuid: randomUUID(), number: '+15559990001' };

interface Setup {
  fake: FakeSignalCli;
  channel: SignalChannel;
  redis: Redis;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

async function setup(
  options: {
    bus?: ChannelBus;
    redisUrl?: string;
    busFor?: (config: ReturnType<typeof parseConfig>) => Promise<Bus>;
  } = {},
): Promise<Setup & { bus: ChannelBus }> {
  const fake = await startFakeSignalCli();
  cleanups.push(() => fake.close());
  const redisUrl = options.redisUrl ?? inject('redisUrl');
  const prefix = `test-${randomUUID()}`;
  const config = parseConfig({
    SIGNAL_RPC_URL: fake.url,
    SIGNAL_ACCOUNT: fake.account,
    SIGNAL_ALLOW_FROM: `${byNumber.number},${byAci.uuid}`,
    MAGPIE_QUEUE_PREFIX: prefix,
    REDIS_URL: redisUrl,
    MAGPIE_MAX_MEDIA_BYTES: '1000',
  });
  const bus = options.busFor ? await options.busFor(config) : (options.bus ?? new RecordingBus());
  const redis = bus instanceof Bus ? bus.redis : new Redis(redisUrl);
  if (!(bus instanceof Bus)) cleanups.push(() => redis.disconnect());
  const channel = new SignalChannel(
    { config, bus, logger: silentLogger(), pairing: new RedisPairingStore(redis, prefix) },
    { typingIntervalMs: 100, bufferRetryMs: 50, reconnectMs: 20 },
  );
  cleanups.push(() => channel.stop());
  await channel.start();
  return { fake, channel, redis, bus };
}

/** A marker DM from the owner: once it is published, everything delivered before it was decided. */
async function marker(fake: FakeSignalCli, bus: RecordingBus, text = 'marker'): Promise<void> {
  fake.deliver({ from: byNumber, text });
  await waitFor(() => bus.published.some((m) => m.content === text));
}

describe('signal channel', () => {
  it('takes an allowed number and an allowed ACI with a hidden number, and offers a stranger a pairing code', async () => {
    const { fake, bus } = await setup();
    const recording = bus as RecordingBus;
    const t1 = fake.deliver({ from: byNumber, text: 'by number' });
    fake.deliver({ from: byAci, text: 'by aci' });
    fake.deliver({ from: stranger, text: 'let me in' });
    await fake.waitFor(() => fake.messages(stranger.uuid).length === 1);
    expect(fake.messages(stranger.uuid)[0]!.text).toMatch(/approve [A-Z2-9]{6}/);
    await marker(fake, recording);
    expect(recording.published.map((m) => [m.content, m.chatId, m.senderId])).toEqual([
      ['by number', byNumber.uuid, byNumber.uuid],
      ['by aci', byAci.uuid, byAci.uuid],
      ['marker', byNumber.uuid, byNumber.uuid],
    ]);
    expect(recording.published[0]).toMatchObject({
      id: `signal:${byNumber.uuid}:${t1}`,
      channel: 'signal',
      isGroup: false,
      platformMessageId: `${t1}:${byNumber.number}`,
    });
    // A read receipt for what was taken.
    await fake.waitFor(() =>
      fake.calls.some(
        (c) => c.method === 'sendReceipt' && (c.params['targetTimestamp'] as number[])[0] === t1,
      ),
    );
  });

  it("ignores an envelope for another account, the account's own messages, and malformed events, and goes on", async () => {
    const { fake, bus } = await setup();
    const recording = bus as RecordingBus;
    fake.deliver({ from: byNumber, text: 'forged for another account', account: '+15550009999' });
    fake.deliver({ from: { uuid: fake.aci, number: fake.account }, text: 'from myself' });
    fake.deliverRaw('{"envelope":');
    fake.deliverRaw('[]');
    fake.deliverRaw(JSON.stringify({ account: fake.account, envelope: { sourceNumber: byNumber.number } }));
    fake.deliverRaw(
      JSON.stringify({
        account: fake.account,
        envelope: { sourceUuid: byNumber.uuid, timestamp: 1, dataMessage: { message: { a: 1 } } },
      }),
    );
    await marker(fake, recording);
    expect(recording.published.map((m) => m.content)).toEqual(['marker']);
    expect(fake.calls.filter((c) => c.method === 'send')).toEqual([]);
  });

  it('in a group answers a mention of the account (by number or ACI) or a quote of its message, nothing else', async () => {
    const { fake, bus, channel } = await setup();
    const recording = bus as RecordingBus;
    const groupId = Buffer.from(`group/${randomUUID()}`).toString('base64');
    fake.deliver({ from: byNumber, groupId, text: 'chatter among people' });
    fake.deliver({
      from: byNumber,
      groupId,
      text: '\uFFFC hello @other',
      mentions: [{ start: 0, length: 1, uuid: randomUUID(), number: '+15553334444', name: 'Other' }],
    });
    const mentioned = fake.deliver({
      from: byNumber,
      groupId,
      text: 'hey \uFFFC what time is it',
      mentions: [{ start: 4, length: 1, uuid: fake.aci }],
    });
    fake.deliver({
      from: byAci,
      groupId,
      text: 'about your answer',
      quote: { id: 5, authorNumber: fake.account },
    });
    fake.deliver({
      from: stranger,
      groupId,
      text: '\uFFFC stranger here',
      mentions: [{ start: 0, length: 1, number: fake.account }],
    });
    await marker(fake, recording);
    const chatId = `group-${Buffer.from(groupId, 'base64').toString('base64url')}`;
    expect(recording.published.map((m) => [m.content, m.chatId, m.isGroup])).toEqual([
      ['hey what time is it', chatId, true],
      ['about your answer', chatId, true],
      ['marker', byNumber.uuid, false],
    ]);
    // No pairing code in a group, no read receipt for a group message.
    expect(fake.messages(groupId)).toEqual([]);
    // The reply goes to the group, quoting the message it answers, with style ranges.
    await channel.send({
      id: 'r-1',
      channel: 'signal',
      chatId,
      content: '**It is** noon 🕛 *sharp*',
      replyTo: recording.published[0]!.platformMessageId,
      kind: 'reply',
      createdAt: new Date().toISOString(),
      metadata: {},
    });
    expect(fake.messages(groupId)).toEqual([
      expect.objectContaining({
        text: 'It is noon 🕛 sharp',
        textStyle: ['0:5:BOLD', '14:5:ITALIC'],
        quoteTimestamp: mentioned,
        quoteAuthor: byNumber.number,
      }),
    ]);
  });

  it('reconnects the event stream after signal-cli restarts: nothing lost, nothing published twice', async () => {
    const { fake, bus, channel } = await setup();
    const recording = bus as RecordingBus;
    fake.deliver({ from: byNumber, text: 'before' });
    await waitFor(() => recording.published.length === 1);
    // signal-cli goes away: the stream ends, new ones are refused for a while.
    fake.setDown(true);
    fake.dropStreams();
    fake.deliver({ from: byNumber, text: 'while away 1' });
    fake.deliver({ from: byAci, text: 'while away 2' });
    await waitFor(() => fake.calls.length > 0 && fake.openStreams() === 0);
    fake.setDown(false);
    await waitFor(() => recording.published.length === 3);
    expect(channel.streamOpens).toBeGreaterThanOrEqual(2);
    // Restarted again, it no longer knows the last id and sends all it keeps.
    fake.forgetIds();
    fake.dropStreams();
    await waitFor(() => channel.streamOpens >= 3);
    await marker(fake, recording, 'after restarts');
    expect(recording.published.map((m) => m.content)).toEqual([
      'before',
      'while away 1',
      'while away 2',
      'after restarts',
    ]);
  });

  it('reads images and voice notes with getAttachment; a file too large or of another kind is a note', async () => {
    const { fake, bus } = await setup();
    const recording = bus as RecordingBus;
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
    const voice = Buffer.from('OggS-voice');
    fake.addAttachment('img-1', png);
    fake.addAttachment('voice-1', voice);
    fake.deliver({
      from: byNumber,
      text: 'look',
      attachments: [
        { id: 'img-1', contentType: 'image/png', filename: 'p.png', size: png.length },
        { id: 'voice-1', contentType: 'audio/aac', size: voice.length },
        { id: 'big-1', contentType: 'image/jpeg', filename: 'big.jpg', size: 5000 },
        { id: 'doc-1', contentType: 'application/pdf', filename: 'a.pdf', size: 10 },
      ],
    });
    await waitFor(() => recording.published.length === 1);
    const media = recording.published[0]!.media!;
    expect(media[0]).toMatchObject({
      kind: 'image',
      dataUrl: `data:image/png;base64,${png.toString('base64')}`,
    });
    expect(media[1]).toMatchObject({
      kind: 'audio',
      name: 'voice note',
      dataUrl: `data:audio/aac;base64,${voice.toString('base64')}`,
    });
    expect(media[2]).toMatchObject({ kind: 'image', note: expect.stringContaining('too large') });
    expect(media[2]).not.toHaveProperty('dataUrl');
    expect(media[3]).toMatchObject({ kind: 'file', note: expect.stringContaining('not opened') });
    expect(fake.calls.filter((c) => c.method === 'getAttachment').map((c) => c.params['recipient'])).toEqual([
      byNumber.uuid,
      byNumber.uuid,
    ]);
  });

  it('types while a turn runs and stops; classifies signal-cli refusals', async () => {
    const { fake, channel } = await setup();
    channel.startActivity(byNumber.uuid);
    await fake.waitFor(() => fake.calls.filter((c) => c.method === 'sendTyping').length >= 2);
    const base = {
      channel: 'signal',
      chatId: byNumber.uuid,
      kind: 'reply',
      createdAt: '',
      metadata: {},
    } as const;
    fake.failNext('send', -1, 'Unregistered user');
    const permanent = await channel.send({ ...base, id: 'p', content: 'x' }).catch((e: unknown) => e);
    expect(permanent).toBeInstanceOf(AppError);
    expect(permanent).toMatchObject({ code: 'DELIVERY_PERMANENT', transient: false });
    expect(fake.calls.some((c) => c.method === 'sendTyping' && c.params['stop'] === true)).toBe(true);
    fake.failNext('send', -5, 'Rate limit');
    const transient = await channel.send({ ...base, id: 't', content: 'x' }).catch((e: unknown) => e);
    expect(transient).toMatchObject({ code: 'DELIVERY_TRANSIENT', transient: true });
    await channel.send({ ...base, id: 't', content: 'x' });
    expect(fake.messages(byNumber.uuid).map((m) => m.text)).toEqual(['x']);
  });
});

describe('signal while Redis is away', () => {
  const dirs: string[] = [];
  let redis: RedisHandle | undefined;
  afterEach(async () => {
    await redis?.stop();
    redis = undefined;
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('holds received messages and publishes each once, in order, when Redis returns', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-signal-redis-'));
    dirs.push(dir);
    redis = await startRedis({ dir });
    const { port } = redis;
    let bus: Bus | undefined;
    const { fake, channel } = await setup({
      redisUrl: redis.url,
      busFor: async (config) => {
        bus = await Bus.connect({ config, logger: silentLogger(), url: redis!.url });
        cleanups.push(() => bus!.close());
        return bus;
      },
    });
    await redis.stop();
    const sent = ['one', 'two', 'three'].map((text) => fake.deliver({ from: byNumber, text }));
    // A replay of one of them while still away.
    fake.redeliver(sent[1]!);
    await waitFor(() => channel.heldMessages === 4);
    redis = await startRedis({ port, dir });
    await waitFor(() => channel.heldMessages === 0, 20_000);
    const check = new Redis(redis.url);
    try {
      const entries = await check.lrange(`${bus!.prefix}:mailbox:signal:${byNumber.uuid}`, 0, -1);
      expect(entries.map((e) => (JSON.parse(e) as { content: string }).content)).toEqual([
        'one',
        'two',
        'three',
      ]);
    } finally {
      check.disconnect();
    }
  });
});

describe('signal doctor', () => {
  it('passes against a reachable daemon holding the account; fails with a fix otherwise', async () => {
    const fake = await startFakeSignalCli();
    cleanups.push(() => fake.close());
    const signal = new AbortController().signal;
    expect(await signalCheck({ rpcUrl: fake.url, account: fake.account }).run(signal)).toMatchObject({
      status: 'ok',
      detail: expect.stringContaining(fake.account),
    });
    expect(await signalCheck({ rpcUrl: fake.url, account: '+15550004444' }).run(signal)).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining('signal-cli link'),
    });
    const down = await signalCheck({
      rpcUrl: `http://127.0.0.1:${await closedPort()}`,
      account: fake.account,
    }).run(signal);
    expect(down).toMatchObject({ status: 'fail', fix: expect.stringContaining('daemon --http') });
    expect(await signalCheck({ rpcUrl: undefined, account: undefined }).run(signal)).toMatchObject({
      status: 'skip',
    });
  });
});
