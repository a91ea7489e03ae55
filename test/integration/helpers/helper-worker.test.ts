/**
 * The helpers queue on real Redis: spawn → a helper job → the helper runs
 * (listed in `<prefix>:helpers` meanwhile) → its result lands as a `system`
 * message in the ORIGIN session's mailbox with a turn job queued; a redone
 * job does not publish twice.
 */
import { Queue } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import type { TurnRequest } from '../../../src/agent/loop.js';
import { TurnMeter } from '../../../src/agent/turn-metrics.js';
import type { TurnOptions, TurnResult } from '../../../src/agent/types.js';
import { Bus } from '../../../src/bus/bus.js';
import { RedisHelperTracker } from '../../../src/bus/helper-records.js';
import { HELPERS_QUEUE, HelpersQueue } from '../../../src/bus/helpers-queue.js';
import { helperKeys } from '../../../src/bus/keys.js';
import { INBOUND_QUEUE } from '../../../src/bus/queues.js';
import { HelperRunner } from '../../../src/helpers/runner.js';
import { HelperWorker, helperResultId } from '../../../src/helpers/worker.js';
import { silentLogger } from '../../../src/log/index.js';
import type { HelperJob } from '../../../src/messages/helper-job.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { createSpawnTool } from '../../../src/tools/spawn.js';
import { toolContext } from '../../unit/tools/helpers.js';
import { testConfig, waitFor } from '../bus/helpers.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A helper "agent loop" that waits for `release()` and answers `reply`; counts its runs. */
function gatedLoop(reply: string) {
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const runs: Array<{ req: TurnRequest; options: TurnOptions }> = [];
  return {
    runs,
    release: () => release(),
    loop: {
      async runAgentLoop(req: TurnRequest, options: TurnOptions = {}): Promise<TurnResult> {
        runs.push({ req, options });
        await gate;
        return {
          sessionKey: req.sessionKey,
          reply,
          target: { channel: req.channel, chatId: req.chatId },
          metrics: new TurnMeter(req.sessionKey).finish('ok'),
        };
      },
    },
  };
}

async function setup(reply: string) {
  const config = testConfig();
  const logger = silentLogger();
  const bus = await Bus.connect({ config, logger, patient: true });
  closers.push(() => bus.close());
  const tracker = new RedisHelperTracker(bus.redis, bus.prefix);
  const gated = gatedLoop(reply);
  const runner = new HelperRunner({
    tools: () => new ToolRegistry([]),
    makeLoop: () => gated.loop,
    logger,
    tracker,
  });
  const worker = new HelperWorker({ bus, runner, logger, concurrency: 2 });
  await worker.start();
  closers.push(() => worker.close());
  const queue = new HelpersQueue(bus, logger);
  closers.push(() => queue.close());
  return { bus, tracker, gated, queue };
}

describe('helpers queue', () => {
  it('runs a spawned helper, lists it while it runs, and queues its result in the origin session', async () => {
    const { bus, tracker, gated, queue } = await setup('found: 42');
    const spawn = createSpawnTool(queue);
    const ctx = toolContext('/tmp', { channel: 'telegram', chatId: '42', sessionKey: 'telegram:42' });
    const answer = await spawn.execute({ task: 'find the answer', label: 'answer' }, ctx);
    const id = /helper (h-[0-9a-f-]+) started/.exec(answer.forLLM)![1]!;

    await waitFor(async () => (await tracker.list()).length === 1, 10_000, 'the helper to be listed');
    const [record] = await tracker.list();
    expect(record).toMatchObject({
      id,
      label: 'answer',
      kind: 'spawn',
      task: 'find the answer',
      origin: { channel: 'telegram', chatId: '42', sessionKey: 'telegram:42' },
      pid: process.pid,
    });
    expect(JSON.parse((await bus.redis.hget(helperKeys.running(bus.prefix), id))!)).toEqual(record);
    expect(gated.runs[0]!.req.sessionKey).toBe(`helper:${id}`);
    expect(gated.runs[0]!.options.depth).toBe(1);

    gated.release();
    const mailbox = bus.mailbox('telegram:42');
    await waitFor(async () => (await mailbox.length()) === 1, 10_000, 'the result in the origin mailbox');
    const { messages } = await mailbox.read(0);
    expect(messages[0]).toMatchObject({
      id: helperResultId(id),
      channel: 'system',
      sessionKey: 'telegram:42',
      metadata: {
        origin: { channel: 'telegram', chatId: '42', sessionKey: 'telegram:42' },
        helper: { id, label: 'answer' },
      },
    });
    expect(messages[0]!.content).toContain('found: 42');
    expect(await bus.pendingJobs(INBOUND_QUEUE)).toBe(1);
    await waitFor(async () => (await tracker.list()).length === 0, 10_000, 'the helper to leave the list');
  });

  it('a redone helper job does not publish its result twice', async () => {
    const { bus, gated, queue } = await setup('once');
    gated.release();
    const job: HelperJob = {
      id: 'h-redo-1',
      task: 'do it',
      origin: { channel: 'cli', chatId: 'c1', sessionKey: 'cli:c1' },
      depth: 1,
      createdAt: new Date().toISOString(),
    };
    const raw = new Queue(HELPERS_QUEUE, { connection: bus.redis, prefix: bus.prefix });
    closers.push(() => raw.close());
    await queue.enqueue(job);
    await waitFor(async () => (await raw.getJobState(job.id)) === 'completed', 10_000, 'the first run');
    // The same job again (as after a crash between publishing and completing).
    await (await raw.getJob(job.id))!.remove();
    await queue.enqueue(job);
    await waitFor(async () => (await raw.getJobState(job.id)) === 'completed', 10_000, 'the redone job');
    expect(gated.runs).toHaveLength(1);
    expect(await bus.mailbox('cli:c1').length()).toBe(1);
  });
});
