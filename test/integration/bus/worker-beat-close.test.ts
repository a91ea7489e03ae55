/**
 * A worker's heartbeat closes while Redis is away (src/bus/worker-beats.ts): its key is left
 * to expire instead of deleted, because the bus's connection waits out a restart and a DEL
 * sent then held the stop until Redis came back — a `magpie start` whose Redis had died never
 * stopped. With Redis up the key is deleted as before. On a real redis-server of this file's
 * own, stopped mid-test and never restarted: a close that waited for it would time the test out.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { opsKeys } from '../../../src/bus/keys.js';
import { createWorkerRedis, serverTarget } from '../../../src/bus/redis.js';
import { listWorkers, WorkerHeartbeat } from '../../../src/bus/worker-beats.js';
import { silentLogger } from '../../../src/log/index.js';
import { startRedis } from '../../fakes/redis-server.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function beating() {
  const server = await startRedis();
  cleanups.push(() => server.stop());
  const redis = createWorkerRedis(serverTarget(server.url));
  cleanups.push(() => redis.disconnect());
  const prefix = `beat-${process.pid}`;
  const beat = new WorkerHeartbeat({ redis, prefix, id: 'w1', concurrency: 4, logger: silentLogger() });
  await beat.start();
  expect((await listWorkers(redis, prefix)).map((w) => w.id)).toEqual(['w1']);
  return { server, redis, prefix, beat };
}

describe('a worker heartbeat closing', () => {
  it('deletes its key while Redis is up', async () => {
    const { redis, prefix, beat } = await beating();
    await beat.close();
    expect(await redis.exists(opsKeys.worker(prefix, 'w1'))).toBe(0);
  });

  it('returns while Redis is away, leaving the key to its TTL, instead of waiting for Redis', async () => {
    const { server, redis, beat } = await beating();
    const away = new Promise<void>((resolve) => redis.once('reconnecting', () => resolve()));
    await server.stop();
    await away;
    expect(redis.status).toBe('reconnecting');

    await beat.close();

    expect(redis.status).toBe('reconnecting');
  });
});
