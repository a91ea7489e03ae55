/**
 * A Sentinel connection leaves a master the Sentinels replaced while it is still up
 * (a second failover right after the first, the new master having been slow to answer
 * them; here `SENTINEL FAILOVER`). Before, it stayed there: writes went through to a
 * master without replicas (every WAIT refused) until the Sentinels demoted it, and an
 * idle or blocked connection stayed even after that (the failover test's stuck runs).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkerRedis, describeTarget, type RedisTarget } from '../../../src/bus/redis.js';
import { type SentinelGroup, sentinelTarget, startSentinelGroup } from '../../fakes/redis-sentinel.js';
import { waitFor } from '../../fakes/wait-for.js';

describe('a Sentinel connection when the Sentinels switch to another master', () => {
  let group: SentinelGroup;
  let target: RedisTarget;
  const opened: Redis[] = [];

  beforeAll(async () => {
    group = await startSentinelGroup({ replicas: 1 });
    target = sentinelTarget(group);
  }, 30_000);

  afterAll(async () => {
    for (const redis of opened) redis.disconnect();
    await group?.stop();
  }, 30_000);

  it('reconnects to the new master while the old one is still up', async () => {
    const redis = createWorkerRedis(target);
    opened.push(redis);
    await redis.ping();
    const oldPort = group.master.port;
    expect(describeTarget(target, redis)).toContain(`at 127.0.0.1:${oldPort}`);
    // A blocked reader, as BullMQ's workers hold one: it must follow too.
    const blocked = redis.duplicate();
    opened.push(blocked);
    const popped = blocked.blpop('switch-master-test', 0);

    const sentinel = new Redis(group.sentinels[0]!.port, '127.0.0.1');
    try {
      await sentinel.call('SENTINEL', 'FAILOVER', group.name);
    } finally {
      sentinel.disconnect();
    }
    await waitFor(async () => (await group.masterPort()) !== oldPort, 15_000, 'the Sentinels switching');
    const newPort = await group.masterPort();
    const switchedAt = Date.now();

    // The old master is still running: only the Sentinels' announcement can move the connection.
    expect(group.master.process.exitCode).toBeNull();
    await waitFor(
      () => describeTarget(target, redis).includes(`at 127.0.0.1:${newPort}`),
      5_000,
      'the connection on the new master',
    );
    expect(Date.now() - switchedAt).toBeLessThan(5_000);
    expect(await redis.set('switch-master-write', 'x')).toBe('OK');

    // The blocked reader moved as well: a push on the new master reaches it.
    await waitFor(
      () => blocked.status === 'ready' && blocked.stream?.remotePort === newPort,
      5_000,
      'blocked reader moved',
    );
    const pusher = new Redis(newPort, '127.0.0.1');
    try {
      await pusher.rpush('switch-master-test', 'hello');
    } finally {
      pusher.disconnect();
    }
    expect(await popped).toEqual(['switch-master-test', 'hello']);
  }, 40_000);

  it("leaves no subscription on the Sentinels once closed, by QUIT (BullMQ's close) or disconnect", async () => {
    const sentinelClients = async () => {
      let total = 0;
      for (const s of group.sentinels) {
        const sentinel = new Redis(s.port, '127.0.0.1');
        try {
          const list = (await sentinel.call('CLIENT', 'LIST')) as string;
          total += list.split('\n').filter((line) => /sub=[1-9]/.test(line)).length;
        } finally {
          sentinel.disconnect();
        }
      }
      return total;
    };
    const before = await sentinelClients();
    const quitting = createWorkerRedis(target);
    const dropped = createWorkerRedis(target);
    await Promise.all([quitting.ping(), dropped.ping()]);
    // Each watches every Sentinel for `+switch-master`.
    await waitFor(async () => (await sentinelClients()) === before + 6, 5_000, 'the Sentinel subscriptions');
    await quitting.quit();
    dropped.disconnect();
    await waitFor(async () => (await sentinelClients()) === before, 5_000, 'the subscriptions dropped');
  });
});
