/**
 * A worker connection closed while it waits to reconnect (src/bus/redis.ts
 * `endsWhenDisconnected`): it ends at once and its waiting commands are refused, so a
 * BullMQ worker closing in the moments after a Redis restart does not hang until its
 * shutdown time-out. On a real redis-server of this file's own, stopped mid-test, and on a
 * real three-master Cluster whose nodes all stop. And two ways a closed Cluster held BullMQ's
 * close after failovers: it went back from 'end' to 'close' as late nodes ended, and a
 * `connect()` whose ready check failed never settled (`staysEnded`, `connectSettles`).
 */
import { Queue, Worker } from 'bullmq';
import { type Cluster, Redis as IORedis, type Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkerRedis, newRedis, serverTarget, workerOptions } from '../../../src/bus/redis.js';
import { clusterTarget, type RedisClusterHandle, startRedisCluster } from '../../fakes/redis-cluster.js';
import { type RedisHandle, startRedis } from '../../fakes/redis-server.js';
import { waitFor } from '../../fakes/wait-for.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function stoppedRedis(): Promise<{ server: RedisHandle; connection: Redis }> {
  const server = await startRedis();
  cleanups.push(() => server.stop());
  const connection = createWorkerRedis(serverTarget(server.url));
  cleanups.push(() => connection.disconnect());
  await connection.ping();
  return { server, connection };
}

/** Resolves at the connection's next wait between two attempts to reconnect. */
function nextWaitToReconnect(connection: Redis): Promise<void> {
  return new Promise((resolve) => connection.once('reconnecting', () => resolve()));
}

describe('a worker connection closed between two attempts to reconnect', () => {
  it.each([
    ['the connection', (c: Redis) => c],
    ['a duplicate of it (as BullMQ makes its blocking connection)', (c: Redis) => c.duplicate()],
  ])('%s ends at once, and the command waiting for Redis is refused', async (_name, pick) => {
    const { server, connection } = await stoppedRedis();
    const redis = pick(connection);
    cleanups.push(() => redis.disconnect());
    await redis.ping();
    const waiting = nextWaitToReconnect(redis);
    await server.stop();
    await waiting;
    expect(redis.status).toBe('reconnecting');
    const queued = redis.get('anything');
    const ended = new Promise<void>((resolve) => redis.once('end', () => resolve()));

    redis.disconnect();

    await ended;
    expect(redis.status).toBe('end');
    await expect(queued).rejects.toThrow('Connection is closed.');
  });

  it('lets a BullMQ worker whose Redis is down close without waiting for its shutdown time-out', async () => {
    const { server, connection } = await stoppedRedis();
    const prefix = `crc-${process.pid}`;
    const queue = new Queue('turns', { connection, prefix });
    cleanups.push(() => queue.disconnect());
    let processed = 0;
    const worker = new Worker(
      'turns',
      async () => {
        processed += 1;
      },
      { connection, prefix, autorun: true },
    );
    await worker.waitUntilReady();
    await queue.add('turn', {});
    await new Promise<void>((resolve) => worker.once('completed', () => resolve()));
    expect(processed).toBe(1);

    const waiting = nextWaitToReconnect(connection);
    await server.stop();
    await waiting;
    // Worker.close() waits for its blocking connection's 'end' before anything else; without
    // the fix it waited forever here (the test's time-out).
    await worker.close();
    expect(worker.isRunning()).toBe(false);
  });
});

/** A worker connection to a fresh three-master Cluster (its own), connected, both cleaned up after the test. */
async function connectedCluster(
  options: Parameters<typeof startRedisCluster>[0] = {},
): Promise<{ cluster: RedisClusterHandle; redis: Cluster }> {
  const cluster = await startRedisCluster(options);
  cleanups.push(() => cluster.stop());
  const redis = newRedis(clusterTarget(cluster), workerOptions()) as unknown as Cluster;
  redis.on('error', () => undefined);
  cleanups.push(() => redis.disconnect());
  await redis.set('{crc}:k', '1');
  return { cluster, redis };
}

describe('a worker connection to a Redis Cluster closed while every node is away', () => {
  /** A worker connection to a three-master Cluster all of whose nodes are then stopped, and a command waiting. */
  async function clusterGone(): Promise<{ redis: Redis; queued: Promise<unknown> }> {
    const { cluster, redis: connected } = await connectedCluster();
    const redis = connected as unknown as Redis;
    await Promise.all(cluster.servers.map((server) => server.stop()));
    // A Cluster notices its nodes are gone when a command needs one, and then waits to reconnect.
    const waiting = nextWaitToReconnect(redis);
    const queued = redis.get('{crc}:k');
    queued.catch(() => undefined);
    await waiting;
    return { redis, queued };
  }

  it('ends at once, and the command waiting for the cluster is refused', async () => {
    const { redis, queued } = await clusterGone();
    expect(redis.status).toBe('reconnecting');
    const ended = new Promise<void>((resolve) => redis.once('end', () => resolve()));

    redis.disconnect();

    await ended;
    expect(redis.status).toBe('end');
    await expect(queued).rejects.toThrow('Cluster is ended.');
  });

  it('ends when closed as it starts connecting again, before its node pool is filled', async () => {
    const { redis, queued } = await clusterGone();
    const ended = new Promise<void>((resolve) => redis.once('end', () => resolve()));
    // 'connecting' is emitted before the startup nodes are resolved and put in the pool: the pool
    // is empty, and ioredis's disconnect waited for a last node's end that never came.
    await new Promise<void>((resolve) =>
      redis.once('connecting', () => {
        expect((redis as unknown as Cluster).nodes()).toHaveLength(0);
        redis.disconnect();
        resolve();
      }),
    );

    await ended;
    expect(redis.status).toBe('end');
    await expect(queued).rejects.toThrow();
  });
});

describe('a Cluster connection closed while one of its nodes is slow to let go', () => {
  it('stays ended when that node’s connection ends after the Cluster has', async () => {
    const { cluster, redis } = await connectedCluster();
    expect(redis.nodes('master')).toHaveLength(3);
    await Promise.all(redis.nodes('master').map((node) => node.ping()));
    // A stopped master never closes its side: ioredis destroys that socket 2 s after the others.
    const slow = redis.nodes('master').find((node) => node.options.port === cluster.servers[0]!.port)!;
    const slowEnded = new Promise<void>((resolve) => slow.once('end', () => resolve()));
    const stopped = cluster.servers[0]!.process;
    stopped.kill('SIGSTOP');
    cleanups.push(() => void stopped.kill('SIGCONT'));
    const ended = new Promise<void>((resolve) => redis.once('end', () => resolve()));

    redis.disconnect();

    await ended;
    await slowEnded;
    // Each later node's end drained the emptied pool once more, and ioredis set 'close' again, for good.
    expect(redis.status).toBe('end');
  });
});

describe('a Cluster connection connecting while the cluster is down', () => {
  it('settles its connect() when it is closed, although the ready check failed and it kept trying', async () => {
    const { cluster, redis } = await connectedCluster({ nodeTimeoutMs: 1_000 });
    const ended = new Promise<void>((resolve) => redis.once('end', () => resolve()));
    redis.disconnect();
    await ended;
    // A master without a replica dies: once the others agree, CLUSTER INFO says the cluster is down.
    await cluster.servers[2]!.stop();
    const live = new IORedis(cluster.servers[0]!.port, '127.0.0.1');
    cleanups.push(() => live.disconnect());
    await waitFor(
      async () => /cluster_state:fail/.test(await live.cluster('INFO')),
      15_000,
      'the cluster down',
    );

    // The slot refresh works (the live masters answer), its ready check does not: ioredis then
    // reconnects by itself, and that attempt's promise is never settled.
    const failedCheck = new Promise<void>((resolve) => redis.once('reconnecting', () => resolve()));
    const connecting = redis.connect();
    connecting.catch(() => undefined);
    await failedCheck;
    redis.disconnect();

    await expect(connecting).rejects.toThrow('Connection is closed.');
    expect(redis.status).toBe('end');
  });
});
