/**
 * A Redis Cluster with a replica per master (cluster-node-timeout 5 s).
 *
 * MAGPIE_REDIS_MIN_REPLICAS: WAIT, which names no key, is sent on the node
 * connection of the master serving magpie's slot, and counts its one replica.
 *
 * A patient connection (workers, subscribers) on a Redis Cluster waits out a
 * failover, as on one server it waits out a restart: a command sent to the slot's
 * master just after its SIGKILL is answered by the replica that takes over. The
 * Cluster's cluster-node-timeout is 5 s, so the failover outlasts ioredis's own 16
 * redirections (about 3 s), after which the command used to fail with "Too many
 * Cluster redirections" and a turn with it. A producer (the channels' publishes)
 * still gives up within seconds, so the platform is not acknowledged and redelivers.
 */

import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { Bus } from '../../../src/bus/bus.js';
import { connectProducer, type RedisTarget } from '../../../src/bus/redis.js';
import { AppError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { type RedisClusterHandle, startRedisCluster } from '../../fakes/redis-cluster.js';
import { rejectedWith } from '../../fakes/rejection.js';
import { waitFor } from '../../fakes/wait-for.js';

const KEY = '{patient}:k';
let cluster: RedisClusterHandle;

beforeAll(async () => {
  cluster = await startRedisCluster({ replicas: 1, nodeTimeoutMs: 5_000 });
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

describe('Redis Cluster: MAGPIE_REDIS_MIN_REPLICAS', () => {
  const connect = (minReplicas: string) =>
    Bus.connect({
      config: parseConfig({
        REDIS_CLUSTER_NODES: cluster.nodes,
        MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
        MAGPIE_WORKSPACE: os.tmpdir(),
        MAGPIE_REDIS_MIN_REPLICAS: minReplicas,
        MAGPIE_REDIS_WAIT_TIMEOUT: '200ms',
      }),
      logger: silentLogger(),
    });
  const message = () => ({
    id: `test:${randomUUID()}`,
    channel: 'test',
    chatId: 'c1',
    senderId: 'u1',
    content: 'hello',
  });

  it("acknowledges once the slot master's replica confirms", async () => {
    const bus = await connect('1');
    try {
      await bus.publishInbound(message());
      await bus.publishOutbound({ id: `o-${randomUUID()}`, channel: 'test', chatId: 'c1', content: 'hi' });
      expect(await bus.mailbox('test:c1').length()).toBe(1);
    } finally {
      await bus.close();
    }
  });

  it('refuses a publish when the slot master has fewer replicas than asked for', async () => {
    const bus = await connect('2');
    try {
      const refused = await rejectedWith(AppError, bus.publishInbound(message()));
      expect(refused).toMatchObject({ code: 'REDIS_UNAVAILABLE', transient: true });
      expect(refused.message).toBe(
        'the inbound message reached 1 of the 2 Redis replica(s) MAGPIE_REDIS_MIN_REPLICAS asks for within 200 ms: not acknowledged, the platform will deliver it again',
      );
    } finally {
      await bus.close();
    }
  });
});

describe('Redis Cluster: a patient connection through a failover', () => {
  it("is answered by the new master; a producer's command fails in one line meanwhile", async () => {
    const target: RedisTarget = {
      kind: 'cluster',
      nodes: cluster.nodes.split(',').map((n) => ({ host: '127.0.0.1', port: Number(n.split(':')[1]) })),
      username: undefined,
      password: undefined,
      tls: undefined,
    };
    const patient = await connectProducer(target, true);
    const producer = await connectProducer(target);
    try {
      const owner = await cluster.ownerPort(KEY);
      // Written straight to the slot's master and confirmed by its replica, so the new master has it.
      const direct = new Redis(owner, '127.0.0.1', { lazyConnect: true });
      await direct.connect();
      await direct.set(KEY, 'before');
      expect(await direct.call('WAIT', 1, 2_000)).toBe(1);
      direct.disconnect();
      // SIGKILLed at once; the read and the refused get go out before its port is held.
      const killing = cluster.servers.find((s) => s.port === owner)!.kill();
      const killedAt = Date.now();
      const read = patient.get(KEY);
      const refused = await rejectedWith(Error, producer.get(KEY));
      expect(refused.message).not.toContain('\n');
      expect(await read).toBe('before');
      await killing;
      const answeredAfterMs = Date.now() - killedAt;
      // Answered by a replica that took over, after a failover longer than ioredis's own redirections.
      expect(await cluster.ownerPort(KEY, owner)).not.toBe(owner);
      expect(answeredAfterMs).toBeGreaterThan(3_500);
      console.info(JSON.stringify({ answeredAfterMs, producer: refused.message }));
      // Back as the new master's replica: every master has one again for the next test.
      await cluster.restart(owner);
    } finally {
      patient.disconnect();
      producer.disconnect();
    }
  }, 60_000);
});

describe('Redis Cluster: a BullMQ consumer through a failover', () => {
  it('completes a job whose processor returned mid-failover on the new master, without running it again', async () => {
    const bus = await Bus.connect({
      config: parseConfig({
        REDIS_CLUSTER_NODES: cluster.nodes,
        MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
        MAGPIE_WORKSPACE: os.tmpdir(),
      }),
      logger: silentLogger(),
    });
    const queue = new Queue('failover-moves', { connection: bus.redis, prefix: bus.prefix });
    let runs = 0;
    let killed: () => void = () => undefined;
    const kill = new Promise<void>((resolve) => {
      killed = resolve;
    });
    let started: () => void = () => undefined;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    // The deployed lock (30 s) and stalled check (15 s): a job left active by a failed move
    // would be run again only after the lock lapsed, well past this test's wait.
    const consumer = bus.consume('failover-moves', async () => {
      runs += 1;
      started();
      await kill;
    });
    try {
      await consumer.ready();
      await queue.add('job', {}, { jobId: 'moved-mid-failover' });
      await running;
      const owner = await cluster.ownerPort(bus.prefix);
      const killing = cluster.servers.find((s) => s.port === owner)!.kill();
      killed();
      // The job's completion goes out now, while the slot has no master for ~6 s.
      await waitFor(
        // The test's own reads fail while the slot has no master: asked again.
        async () => (await queue.getJobState('moved-mid-failover').catch(() => undefined)) === 'completed',
        25_000,
        'the job completed on the new master',
        100,
      );
      await killing;
      expect(await cluster.ownerPort(bus.prefix, owner)).not.toBe(owner);
      expect(runs).toBe(1);
    } finally {
      await consumer.close();
      await queue.close();
      await bus.close();
    }
  }, 60_000);
});
