/** Shared set-up for the scheduler's integration tests: config, bus, tool context, polling. */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { Queue } from 'bullmq';
import { afterEach, beforeEach, inject } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { Bus } from '../../../src/bus/bus.js';
import { CronStore } from '../../../src/bus/cron-store.js';
import type { Config } from '../../../src/config/index.js';
import { createLogger, type Logger, silentLogger } from '../../../src/log/index.js';
import type { ToolContext } from '../../../src/tools/types.js';

export async function tempWorkspace(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), 'magpie-sched-'));
}

export function testConfig(
  redisUrl: string,
  prefix: string,
  workspace: string,
  env: Record<string, string> = {},
): Config {
  return parseConfig({
    REDIS_URL: redisUrl,
    MAGPIE_QUEUE_PREFIX: prefix,
    MAGPIE_WORKSPACE: workspace,
    MAGPIE_TIMEZONE: 'UTC',
    MAGPIE_HEARTBEAT_INTERVAL: '0',
    ...env,
  });
}

export async function connectBus(config: Config): Promise<Bus> {
  return Bus.connect({ config, logger: silentLogger(), url: config.redis.url! });
}

/** A logger whose JSON lines are kept in `lines` (to await a log event instead of sleeping). */
export function capturingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line.trim()) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger({ level: 'debug', destination }), lines };
}

export function toolContext(channel: string, chatId: string, workspace: string): ToolContext {
  return {
    channel,
    chatId,
    sessionKey: `${channel}:${chatId}`,
    workspace,
    signal: new AbortController().signal,
    logger: silentLogger(),
    send: async () => undefined,
    depth: 0,
  };
}

export { waitFor } from '../../fakes/wait-for.js';

/** Every job of a channel's outbound queue, whatever its state (nobody consumes it in these tests). */
export async function outboundJobs(
  bus: Bus,
  channel: string,
): Promise<Array<{ id: string; data: Record<string, unknown> }>> {
  const queue = new Queue(`outbound-${channel}`, { connection: bus.redis, prefix: bus.prefix });
  try {
    const jobs = await queue.getJobs(['waiting', 'active', 'delayed', 'completed', 'failed', 'prioritized']);
    return jobs.map((j) => ({ id: j.id ?? '', data: j.data as Record<string, unknown> }));
  } finally {
    await queue.close();
  }
}

/** What each scheduler test gets: a fresh workspace, a unique prefix, its config, a bus and the cron store. */
export interface SchedulerFixture {
  workspace: string;
  prefix: string;
  config: Config;
  bus: Bus;
  store: CronStore;
}

/**
 * Makes a fresh {@link SchedulerFixture} before each test of the describe
 * block and closes it after (after the block's own afterEach hooks). The
 * returned object's fields are those of the running test.
 *
 * @example
 * const fx = schedulerFixturePerTest();
 * it('…', async () => { await fx.store.list(); });
 */
export function schedulerFixturePerTest(): SchedulerFixture {
  const fx = {} as SchedulerFixture;
  beforeEach(async () => {
    fx.workspace = await tempWorkspace();
    fx.prefix = `test-${randomUUID()}`;
    fx.config = testConfig(inject('redisUrl'), fx.prefix, fx.workspace);
    fx.bus = await connectBus(fx.config);
    fx.store = new CronStore({ connection: fx.bus.redis, prefix: fx.prefix });
  });
  afterEach(async () => {
    await fx.store.close();
    await fx.bus.close();
    await rm(fx.workspace, { recursive: true, force: true });
  });
  return fx;
}

/** The environment of a `magpie` subprocess on the fixture's Redis prefix and workspace (the test's own env plus `extra`). */
export function fixtureProcessEnv(
  fx: SchedulerFixture,
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  return {
    ...process.env,
    REDIS_URL: inject('redisUrl'),
    MAGPIE_QUEUE_PREFIX: fx.prefix,
    MAGPIE_WORKSPACE: fx.workspace,
    ...extra,
  };
}
