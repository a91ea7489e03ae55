import { Queue } from 'bullmq';
import { describe, expect, inject, it } from 'vitest';
import type { AgentRunner } from '../../../src/agent/types.js';
import { silentLogger } from '../../../src/log/index.js';
import { startScheduler } from '../../../src/scheduler/index.js';
import { schedulerFixturePerTest, testConfig } from './helpers.js';

const unused = async () => {
  throw new Error('not used');
};
const agent: AgentRunner = { processMessage: unused, processDirect: unused, processHeartbeat: unused };
const state = { setLastChannel: async () => undefined, getLastChannel: async () => undefined };

describe('startScheduler: the heartbeat job scheduler', () => {
  const fx = schedulerFixturePerTest();

  const start = (interval: string) =>
    startScheduler({
      config: testConfig(inject('redisUrl'), fx.prefix, fx.workspace, {
        MAGPIE_HEARTBEAT_INTERVAL: interval,
      }),
      bus: fx.bus,
      agent,
      state,
      logger: silentLogger(),
      store: fx.store,
    });
  const heartbeatScheduler = async () => {
    const queue = new Queue('scheduled', { connection: fx.bus.redis, prefix: fx.prefix });
    try {
      return await queue.getJobScheduler('heartbeat');
    } finally {
      await queue.close();
    }
  };

  it('is upserted idempotently (first tick one interval after start) and removed when the interval is 0', async () => {
    const before = Date.now();
    const a = await start('1h');
    const b = await start('1h'); // a second worker process starting
    const scheduler = await heartbeatScheduler();
    expect(scheduler?.every).toBe(3_600_000);
    expect(scheduler?.next).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(scheduler?.next).toBeLessThanOrEqual(Date.now() + 3_600_000);
    expect(await fx.bus.pendingJobs('scheduled')).toBe(1);
    await Promise.all([a.close(), b.close()]);
    expect(a.close()).toBe(a.close()); // same promise

    const off = await start('0');
    expect(await heartbeatScheduler()).toBeUndefined();
    expect(await fx.bus.pendingJobs('scheduled')).toBe(0);
    await off.close();
  });
});
