/** Messages received while Redis is away are held and reach the bus, in order, when it returns. */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { Bus } from '../../../src/bus/bus.js';
import { approvePairing } from '../../../src/bus/pairing-store.js';
import { silentLogger } from '../../../src/log/index.js';
import type { FakeUser } from '../../fakes/discord-server.js';
import { type RedisHandle, startRedis } from '../../fakes/redis-server.js';
import { waitFor } from '../../fakes/wait-for.js';
import { type Harness, RecordingBus, startHarness } from './discord-harness.js';

let harness: Harness | undefined;
let bus: Bus | undefined;
let redis: RedisHandle | undefined;
const dirs: string[] = [];

afterEach(async () => {
  await harness?.close();
  await bus?.close();
  await redis?.stop();
  harness = undefined;
  bus = undefined;
  redis = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('discord inbound buffer', () => {
  it('holds messages while Redis is down and publishes them in order after it returns', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-discord-redis-'));
    dirs.push(dir);
    redis = await startRedis({ dir });
    const { port } = redis;
    const busUrl = redis.url;
    // As in the gateway, the access check and the bus share the bus's fail-fast connection.
    harness = await startHarness({
      redisUrl: busUrl,
      bus: async (config) => {
        bus = await Bus.connect({ config, logger: silentLogger(), url: busUrl });
        return bus;
      },
      useBusRedis: true,
    });
    const { channel, fake, owner } = harness;
    await channel.start();
    // A sender admitted by pairing (not on the allow-list): their access check needs Redis.
    const stranger: FakeUser = { id: fake.newId(), username: 'paired' };
    const strangerDm = fake.newId();
    fake.dispatchMessage({ channelId: strangerDm, author: stranger, content: 'hi' });
    await fake.waitFor(() => fake.sent(strangerDm).length === 1);
    const code = /approve ([A-Z2-9]{6})/.exec(fake.sent(strangerDm)[0]!.content)![1]!;
    await approvePairing(bus!.redis, harness.prefix, code);
    const dm = fake.newId();

    await redis.stop();
    for (const text of ['one', 'two', 'three'])
      fake.dispatchMessage({ channelId: dm, author: owner, content: text });
    fake.dispatchMessage({ channelId: strangerDm, author: stranger, content: 'paired while away' });
    await waitFor(() => channel.heldMessages === 4);

    redis = await startRedis({ port, dir });
    await waitFor(() => channel.heldMessages === 0, 20_000);
    const check = new Redis(redis.url);
    try {
      const read = async (chat: string) =>
        (await check.lrange(`${harness!.prefix}:mailbox:discord:${chat}`, 0, -1)).map(
          (e) => (JSON.parse(e) as { content: string }).content,
        );
      expect(await read(dm)).toEqual(['one', 'two', 'three']);
      expect(await read(strangerDm)).toEqual(['paired while away']);
    } finally {
      check.disconnect();
    }
  });

  it('drops the oldest held message when the buffer is full and keeps the order of the rest', async () => {
    const recording = new RecordingBus();
    harness = await startHarness({
      redisUrl: inject('redisUrl'),
      bus: recording,
      channelOptions: { bufferCapacity: 2, bufferRetryMs: 20 },
    });
    await harness.channel.start();
    const { fake, owner, channel } = harness;
    const dm = fake.newId();
    recording.failing = true;
    for (const text of ['a', 'b', 'c']) {
      fake.dispatchMessage({ channelId: dm, author: owner, content: text });
      await waitFor(
        () =>
          recording.attempts > 0 && channel.heldMessages === Math.min(2, ['a', 'b', 'c'].indexOf(text) + 1),
      );
    }
    recording.failing = false;
    await waitFor(() => channel.heldMessages === 0);
    expect(recording.published.map((m) => m.content)).toEqual(['b', 'c']);
  });
});
