/**
 * A Sentinel connection its owner closes leaves nothing behind that keeps the process
 * alive. ioredis's `disconnect()` stops the connection's failover detector (its
 * subscriptions to the Sentinels), and magpie stopped it again on 'close': ending a
 * Sentinel connection whose socket had already closed starts a 2 s timer that no
 * 'close' clears any more. Every stopped worker and gateway then lived 2 s past
 * "magpie stopped" (the chaos bench's final stop, after failovers or none).
 */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkerRedis, type RedisTarget } from '../../../src/bus/redis.js';
import { type SentinelGroup, sentinelTarget, startSentinelGroup } from '../../fakes/redis-sentinel.js';

/** Timers keeping the process alive (`process.getActiveResourcesInfo` lists only those). */
const liveTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

/** Resolves once `redis` has subscribed to the Sentinels' failover announcements. */
const subscribed = (redis: Redis) =>
  new Promise<void>((resolve) => redis.once('failoverSubscribed', resolve));
const ended = (redis: Redis) =>
  redis.status === 'end' ? Promise.resolve() : new Promise<void>((resolve) => redis.once('end', resolve));

/** The connections of `redis`'s failover detector to the Sentinels (ioredis's private state). */
function detectorConnections(redis: Redis): Redis[] {
  const { connector } = redis as unknown as {
    connector: { failoverDetector?: { sentinels: Array<{ client: Redis }> } | null };
  };
  return connector.failoverDetector?.sentinels.map((s) => s.client) ?? [];
}

describe('closing a Sentinel connection', () => {
  let group: SentinelGroup;
  let target: RedisTarget;

  beforeAll(async () => {
    group = await startSentinelGroup({ replicas: 1 });
    target = sentinelTarget(group);
  }, 30_000);

  afterAll(async () => {
    await group?.stop();
  }, 30_000);

  it('leaves no timer running once it has ended (10 connections, each closed after its detector subscribed)', async () => {
    const before = liveTimers();
    for (let i = 0; i < 10; i++) {
      const redis = createWorkerRedis(target);
      const detector = subscribed(redis);
      await redis.ping();
      await detector;
      const sentinels = detectorConnections(redis);
      expect(sentinels).toHaveLength(group.sentinels.length);
      const end = ended(redis);
      redis.disconnect();
      await end;
      await Promise.all(sentinels.map(ended));
    }
    expect(liveTimers()).toBeLessThanOrEqual(before);
  });
});
