/**
 * The cron tool's limits on real Redis: tasks per chat, agent-mode tasks per
 * chat, the shortest interval of an agent-mode task, a refusal as one line to
 * the model; two concurrent adds at the limit, one accepted; the announcement
 * of an agent-mode task in its chat.
 */

import { Redis } from 'ioredis';
import { describe, expect, inject, it } from 'vitest';
import { CronStore, type CronTask, newTaskId } from '../../../src/bus/cron-store.js';
import type { OutboundMessageInput } from '../../../src/messages/messages.js';
import { collectStatus } from '../../../src/ops/status.js';
import { formatStatus } from '../../../src/ops/status-format.js';
import { createCronTool } from '../../../src/tools/cron.js';
import type { ToolContext } from '../../../src/tools/types.js';
import { schedulerFixturePerTest, testConfig, toolContext } from './helpers.js';

/** A reminder of `chat` stored directly, to fill a chat up quickly. */
function reminder(chat: string, mode: CronTask['mode'] = 'remind'): CronTask {
  return {
    id: newTaskId(),
    channel: 'telegram',
    chatId: chat,
    sessionKey: `telegram:${chat}`,
    message: 'fill',
    mode,
    schedule: { kind: 'once', runAt: Date.now() + 86_400_000, tz: 'UTC', description: 'once' },
    createdAt: new Date().toISOString(),
  };
}

const unlimited = { maxPerChat: 1_000, maxAgentPerChat: 1_000 };

describe('cron limits (real Redis)', () => {
  const fx = schedulerFixturePerTest();
  const tool = (env: Record<string, string> = {}) =>
    createCronTool({ store: fx.store, config: testConfig(inject('redisUrl'), fx.prefix, fx.workspace, env) });

  it('refuses the 51st task of a chat in one line, and still accepts one in another chat', async () => {
    for (let i = 0; i < 50; i++) await fx.store.addWithinLimits(reminder('1'), unlimited);
    const cron = tool();
    const refused = await cron.execute(
      { action: 'add', message: 'one more', in_seconds: 600 },
      toolContext('telegram', '1', fx.workspace),
    );
    expect(refused.isError).toBe(true);
    expect(refused.forLLM).toContain('already has 50 scheduled tasks');
    expect(refused.forLLM).toContain('MAGPIE_CRON_MAX_PER_CHAT=50');
    expect(refused.forLLM).not.toContain('\n');
    expect(await fx.store.list({ sessionKey: 'telegram:1' })).toHaveLength(50);
    const elsewhere = await cron.execute(
      { action: 'add', message: 'other chat', in_seconds: 600 },
      toolContext('telegram', '2', fx.workspace),
    );
    expect(elsewhere.isError).toBeUndefined();
  });

  it('refuses an agent task every minute (or a cron every 5 minutes), accepts a reminder every minute', async () => {
    const cron = tool();
    const ctx = toolContext('telegram', '1', fx.workspace);
    const everyMinute = await cron.execute(
      { action: 'add', message: 'check the news', every_seconds: 60, mode: 'agent' },
      ctx,
    );
    expect(everyMinute.isError).toBe(true);
    expect(everyMinute.forLLM).toMatch(/at most once every 15m .*MAGPIE_CRON_MIN_INTERVAL.* every 1m/);
    const cronFive = await cron.execute(
      { action: 'add', message: 'check the news', cron: '*/5 9 * * *', mode: 'agent' },
      ctx,
    );
    expect(cronFive.isError).toBe(true);
    const remind = await cron.execute({ action: 'add', message: 'stretch', every_seconds: 60 }, ctx);
    expect(remind.isError).toBeUndefined();
    const hourly = await cron.execute(
      { action: 'add', message: 'check the news', cron: '0 * * * *', mode: 'agent' },
      ctx,
    );
    expect(hourly.isError).toBeUndefined();
    expect((await fx.store.list({ sessionKey: 'telegram:1' })).map((t) => t.task.mode).sort()).toEqual([
      'agent',
      'remind',
    ]);
  });

  it('refuses the 6th agent-mode task of a chat; reminders still fit', async () => {
    const cron = tool();
    const ctx = toolContext('telegram', '1', fx.workspace);
    for (let i = 0; i < 5; i++) {
      const added = await cron.execute(
        { action: 'add', message: `job ${i}`, in_seconds: 600, mode: 'agent' },
        ctx,
      );
      expect(added.isError).toBeUndefined();
    }
    const sixth = await cron.execute(
      { action: 'add', message: 'job 5', in_seconds: 600, mode: 'agent' },
      ctx,
    );
    expect(sixth.isError).toBe(true);
    expect(sixth.forLLM).toContain('already has 5 agent-mode tasks');
    expect(sixth.forLLM).toContain('MAGPIE_CRON_MAX_AGENT_PER_CHAT=5');
    const remind = await cron.execute({ action: 'add', message: 'a reminder', in_seconds: 600 }, ctx);
    expect(remind.isError).toBeUndefined();
  });

  it('accepts exactly one of two concurrent adds at the limit', async () => {
    for (let i = 0; i < 49; i++) await fx.store.addWithinLimits(reminder('1'), unlimited);
    const cron = tool();
    const ctx = toolContext('telegram', '1', fx.workspace);
    const results = await Promise.all([
      cron.execute({ action: 'add', message: 'first', in_seconds: 600 }, ctx),
      cron.execute({ action: 'add', message: 'second', in_seconds: 600 }, ctx),
    ]);
    expect(results.filter((r) => r.isError === undefined)).toHaveLength(1);
    expect(results.filter((r) => r.isError === true)).toHaveLength(1);
    expect(await fx.store.list({ sessionKey: 'telegram:1' })).toHaveLength(50);
  });

  it('accepts exactly one of two concurrent adds through two stores (two workers) at the agent limit', async () => {
    const connection = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
    const other = new CronStore({ connection, prefix: fx.prefix });
    try {
      // 40 reminders first: each add lists them, which leaves a wide window for a race without the lock.
      for (let i = 0; i < 40; i++) await fx.store.addWithinLimits(reminder('1'), unlimited);
      const limits = { maxPerChat: 50, maxAgentPerChat: 1 };
      const results = await Promise.all([
        fx.store.addWithinLimits(reminder('1', 'agent'), limits),
        other.addWithinLimits(reminder('1', 'agent'), limits),
      ]);
      expect(results.filter((r) => r.added)).toHaveLength(1);
      expect(await fx.store.list({ sessionKey: 'telegram:1' })).toHaveLength(41);
    } finally {
      await other.close();
      await connection.quit();
    }
  });

  it('announces an agent-mode task in its chat, with how to remove it; a reminder is not announced', async () => {
    const sent: Array<Omit<OutboundMessageInput, 'id'>> = [];
    const ctx: ToolContext = {
      ...toolContext('telegram', '1', fx.workspace),
      threadId: '7',
      send: async (message) => {
        sent.push(message);
      },
    };
    const cron = tool();
    const added = await cron.execute(
      { action: 'add', message: 'summarise my inbox', every_seconds: 3600, mode: 'agent' },
      ctx,
    );
    expect(added.isError).toBeUndefined();
    const id = /agent task ([a-z0-9]+)/.exec(added.forLLM)![1]!;
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ channel: 'telegram', chatId: '1', threadId: '7', kind: 'message' });
    expect(sent[0]!.content).toContain(`Scheduled an agent task (${id}): "summarise my inbox"`);
    expect(sent[0]!.content).toContain('full turn with tools every 1 h');
    expect(sent[0]!.content).toContain(`magpie cron remove ${id}`);
    await cron.execute({ action: 'add', message: 'stretch', in_seconds: 600 }, ctx);
    expect(sent).toHaveLength(1);
  });

  it('follows the configured limits', async () => {
    const cron = tool({ MAGPIE_CRON_MAX_PER_CHAT: '2', MAGPIE_CRON_MIN_INTERVAL: '1m' });
    const ctx = toolContext('telegram', '1', fx.workspace);
    const minute = await cron.execute({ action: 'add', message: 'a', every_seconds: 60, mode: 'agent' }, ctx);
    expect(minute.isError).toBeUndefined();
    await cron.execute({ action: 'add', message: 'b', in_seconds: 600 }, ctx);
    const third = await cron.execute({ action: 'add', message: 'c', in_seconds: 600 }, ctx);
    expect(third.forLLM).toContain('MAGPIE_CRON_MAX_PER_CHAT=2');
  });

  it('marks agent-mode tasks in magpie status', async () => {
    const cron = tool();
    const ctx = toolContext('telegram', '1', fx.workspace);
    await cron.execute({ action: 'add', message: 'summarise', every_seconds: 3600, mode: 'agent' }, ctx);
    await cron.execute({ action: 'add', message: 'stretch', in_seconds: 600 }, ctx);
    const report = await collectStatus({
      reader: fx.bus.opsReader,
      url: fx.bus.url,
      prefix: fx.bus.prefix,
      workspace: fx.workspace,
      timezone: 'UTC',
    });
    const lines = formatStatus(report).split('\n');
    expect(lines.find((l) => l.includes('summarise'))).toContain(
      'telegram:1 [AGENT: full turn with tools]: summarise',
    );
    expect(lines.find((l) => l.includes('stretch'))).not.toContain('AGENT');
  });
});
