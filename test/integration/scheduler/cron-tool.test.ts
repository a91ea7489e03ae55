import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import type { AgentRunner } from '../../../src/agent/types.js';
import type { Bus } from '../../../src/bus/bus.js';
import { CronStore } from '../../../src/bus/cron-store.js';
import type { Config } from '../../../src/config/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { type RunningScheduler, startScheduler } from '../../../src/scheduler/index.js';
import { createCronTool } from '../../../src/tools/cron.js';
import { connectBus, outboundJobs, tempWorkspace, testConfig, toolContext, waitFor } from './helpers.js';

const noAgent: AgentRunner = {
  processMessage: async () => {
    throw new Error('not used');
  },
  processDirect: async () => {
    throw new Error('not used');
  },
  processHeartbeat: async () => {
    throw new Error('not used');
  },
};
const noState = { setLastChannel: async () => undefined, getLastChannel: async () => undefined };

describe('cron tool and scheduled tasks (real Redis)', () => {
  let workspace: string;
  let config: Config;
  let bus: Bus;
  let scheduler: RunningScheduler | undefined;
  let store: CronStore;

  beforeEach(async () => {
    workspace = await tempWorkspace();
    config = testConfig(inject('redisUrl'), `test-${randomUUID()}`, workspace, {
      MAGPIE_TIMEZONE: 'Europe/Lisbon',
    });
    bus = await connectBus(config);
    store = new CronStore({ connection: bus.redis, prefix: bus.prefix });
    scheduler = undefined;
  });
  afterEach(async () => {
    await scheduler?.close();
    await store.close();
    await bus.close();
    await rm(workspace, { recursive: true, force: true });
  });

  const start = async () => {
    scheduler = await startScheduler({
      config,
      bus,
      agent: noAgent,
      state: noState,
      logger: silentLogger(),
      store,
    });
  };

  it('delivers a reminder in_seconds: 2 once, to the chat that asked, and then forgets it', async () => {
    await start();
    const tool = createCronTool({ store, config });
    const ctx = toolContext('telegram', '4242', workspace);
    const added = await tool.execute({ action: 'add', message: 'call Ana', in_seconds: 2 }, ctx);
    expect(added.isError).toBeUndefined();
    expect(added.forLLM).toMatch(/next run: \w{3} \d+ \w{3} \d{4} \d{2}:\d{2}(:\d{2})? Europe\/Lisbon/);
    const startedAt = Date.now();

    const [delivered] = await waitFor(
      async () => {
        const jobs = await outboundJobs(bus, 'telegram');
        return jobs.length > 0 ? jobs : undefined;
      },
      10_000,
      'the reminder',
    );
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1_500);
    expect(delivered!.data).toMatchObject({
      chatId: '4242',
      channel: 'telegram',
      content: '⏰ call Ana',
      kind: 'message',
    });
    expect(delivered!.id).toMatch(/^cron-[a-z0-9]+-\d+$/);

    // One-shot tasks disappear after firing; and exactly one message went out.
    await waitFor(
      async () => (await tool.execute({ action: 'list' }, ctx)).forLLM === 'No scheduled tasks in this chat.',
    );
    expect(await outboundJobs(bus, 'telegram')).toHaveLength(1);
  });

  it('queues an agent-mode task as a message of the origin session, once per occurrence', async () => {
    await start();
    const tool = createCronTool({ store, config });
    const ctx = toolContext('discord', '77', workspace);
    await tool.execute(
      { action: 'add', message: 'summarise my calendar', in_seconds: 1, mode: 'agent' },
      ctx,
    );
    const mailboxKey = `${bus.prefix}:mailbox:discord:77`;
    const raw = await waitFor(
      async () => {
        const entries = await bus.redis.lrange(mailboxKey, 0, -1);
        return entries.length > 0 ? entries : undefined;
      },
      10_000,
      'the scheduled turn in the mailbox',
    );
    expect(raw).toHaveLength(1);
    const message = JSON.parse(raw[0]!);
    expect(message).toMatchObject({
      channel: 'discord',
      chatId: '77',
      metadata: { cron: expect.any(String) },
    });
    expect(message.content).toMatch(/^\[scheduled task .*\] summarise my calendar$/);
  });

  it("does not let one chat list or remove another chat's tasks", async () => {
    const tool = createCronTool({ store, config });
    const alice = toolContext('telegram', 'alice', workspace);
    const bob = toolContext('telegram', 'bob', workspace);
    const added = await tool.execute(
      { action: 'add', message: 'water the plants', cron: '0 9 * * *' },
      alice,
    );
    const id = /Scheduled reminder ([a-z0-9]+)/.exec(added.forLLM)?.[1];
    expect(id).toBeDefined();

    expect((await tool.execute({ action: 'list' }, bob)).forLLM).toBe('No scheduled tasks in this chat.');
    const denied = await tool.execute({ action: 'remove', id: id! }, bob);
    expect(denied.isError).toBe(true);
    expect(denied.forLLM).toMatch(/no scheduled task .* in this chat/);
    expect((await tool.execute({ action: 'list' }, alice)).forLLM).toContain(id!);

    const removed = await tool.execute({ action: 'remove', id: id! }, alice);
    expect(removed.forLLM).toBe(`Removed scheduled task ${id}.`);
    expect((await tool.execute({ action: 'list' }, alice)).forLLM).toBe('No scheduled tasks in this chat.');
  });

  it('states the next run of a cron task in its zone and stores it as a job scheduler', async () => {
    const tool = createCronTool({ store, config, now: () => Date.UTC(2026, 10, 29, 12) });
    const ctx = toolContext('telegram', '1', workspace);
    const added = await tool.execute(
      { action: 'add', message: 'report', cron: '0 9 1 12 *', tz: 'Europe/Lisbon' },
      ctx,
    );
    expect(added.forLLM).toContain('next run: Tue 1 Dec 2026 09:00 Europe/Lisbon');
    const [listed] = await store.list();
    expect(listed?.task).toMatchObject({
      sessionKey: 'telegram:1',
      schedule: { kind: 'cron', tz: 'Europe/Lisbon' },
    });
  });

  it('removes a recurring task together with its pending occurrence', async () => {
    const tool = createCronTool({ store, config });
    const ctx = toolContext('telegram', '5', workspace);
    const added = await tool.execute({ action: 'add', message: 'stretch', every_seconds: 3600 }, ctx);
    const id = /reminder ([a-z0-9]+)/.exec(added.forLLM)![1]!;
    expect(added.forLLM).toContain('every 1 h');
    expect(await bus.pendingJobs('scheduled')).toBe(1);
    expect((await tool.execute({ action: 'remove', id }, ctx)).isError).toBeUndefined();
    expect(await bus.pendingJobs('scheduled')).toBe(0);
  });

  it('answers invalid schedules with errors the model can act on', async () => {
    const tool = createCronTool({ store, config });
    const ctx = toolContext('telegram', '9', workspace);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ at: '2020-01-01T09:00' }, /in the past/],
      [{ cron: 'every monday' }, /5 fields/],
      [{ cron: '0 9 * * *', tz: 'Nowhere/Special' }, /not an IANA time zone/],
      [{ in_seconds: 60, every_seconds: 120 }, /exactly one/],
      [{}, /none was given/],
    ];
    for (const [schedule, error] of cases) {
      const result = await tool.execute({ action: 'add', message: 'x', ...schedule } as never, ctx);
      expect(result.isError, JSON.stringify(schedule)).toBe(true);
      expect(result.forLLM).toMatch(error);
    }
    expect((await tool.execute({ action: 'add', in_seconds: 5 }, ctx)).forLLM).toMatch(/needs a message/);
    const internal = toolContext('system', 'helper', workspace);
    expect((await tool.execute({ action: 'add', message: 'x', in_seconds: 5 }, internal)).forLLM).toMatch(
      /belong to a user chat/,
    );
    expect(await bus.pendingJobs('scheduled')).toBe(0);
  });
});
