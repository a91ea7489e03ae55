/**
 * `magpie worker` and `magpie gateway` on a Redis Cluster (three masters, two
 * replicas each) stop on SIGTERM within seconds after the master serving their
 * slot was killed three times, each time replaced by a replica and started again
 * as one. A BullMQ consumer whose blocking connection waited out failovers held
 * its fetch loop, and with it its close, for minutes: both processes were still
 * running 30 s after SIGTERM. Now only the consumer's own connection (its job
 * moves) waits out a failover, and both stop in about 60 ms.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedWithin } from '../../src/bus/bounded-close.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { type RedisClusterHandle, startRedisCluster } from '../fakes/redis-cluster.js';
import { waitFor } from '../fakes/wait-for.js';
import { build, daemonEnv, magpie, type Proc, tempWorkspace } from './daemon-helpers.js';

const FAILOVERS = 3;

describe('daemon roles on a Redis Cluster after failovers', () => {
  let cluster: RedisClusterHandle;
  let openai: FakeOpenAI;
  const procs: Proc[] = [];

  beforeAll(async () => {
    build();
    cluster = await startRedisCluster({ replicas: 2 });
    openai = await startFakeOpenAI({ responder: () => ({ content: 'ok' }) });
  }, 60_000);

  afterAll(async () => {
    for (const p of procs)
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await openai?.close();
    await cluster?.stop();
  }, 30_000);

  it(`stop on SIGTERM within seconds after ${FAILOVERS} failovers of their slot's master`, async () => {
    const env = daemonEnv({
      OPENAI_BASE_URL: openai.baseURL,
      MAGPIE_WORKSPACE: tempWorkspace(),
      REDIS_CLUSTER_NODES: cluster.nodes,
      MAGPIE_REDIS_MIN_REPLICAS: '1',
    });
    const slotKey = `{${env.MAGPIE_QUEUE_PREFIX}}`;
    const worker = magpie(['worker'], env);
    const gateway = magpie(['gateway'], env);
    procs.push(worker, gateway);
    await Promise.all([worker, gateway].map((p) => p.waitFor(/magpie is running/, 60_000)));
    for (let i = 0; i < FAILOVERS; i++) {
      const old = await cluster.ownerPort(slotKey);
      const victim = cluster.servers.find((s) => s.port === old);
      await victim?.kill();
      await waitFor(
        async () => (await cluster.ownerPort(slotKey, old).catch(() => old)) !== old,
        30_000,
        'a replica taking over the slot',
      );
      await cluster.restart(old);
    }
    const stopping = Date.now();
    worker.child.kill('SIGTERM');
    gateway.child.kill('SIGTERM');
    const stopped = await closedWithin(Promise.all([worker.exited, gateway.exited]), 20_000);
    expect(stopped, `still running 20 s after SIGTERM:\n${worker.stderr().slice(-1500)}`).toBe(true);
    expect(await worker.exited).toBe(0);
    expect(await gateway.exited).toBe(0);
    console.info(JSON.stringify({ stoppedInMs: Date.now() - stopping }));
  }, 180_000);
});
