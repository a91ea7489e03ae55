/**
 * Spending limits on the real stack: buildAgent's agent over the fake OpenAI
 * server (which reports usage), turn workers on real Redis, the budget's Lua
 * store, a recording channel, and an injected clock (Europe/Berlin).
 */
import { execFile } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { periodOf } from '../../../src/budget/budget.js';
import type { Config } from '../../../src/config/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { createMetrics } from '../../../src/ops/metrics.js';
import { fireTask } from '../../../src/scheduler/fire.js';
import { HeartbeatRunner } from '../../../src/scheduler/heartbeat.js';
import { zonedWallTimeToUtc } from '../../../src/time/schedule.js';
import { type FakeOpenAI, type FakeReply, startFakeOpenAI } from '../../fakes/openai-server.js';
import { inbound, waitFor } from '../bus/helpers.js';
import { budgetConfig, removeWorkspace, startBudgetWorker, startGateway, TestClock } from './harness.js';

const BIN = path.resolve('dist/cli/bin.js');
const ZONE = 'Europe/Berlin';
/** 23:50 today in Berlin: the test's clock; the CLI, on the real clock, reads the same day. */
const TODAY = periodOf(Date.now(), ZONE).date;
const [Y, M, D] = TODAY.split('-').map(Number) as [number, number, number];
const BEFORE_MIDNIGHT = zonedWallTimeToUtc(
  { year: Y, month: M, day: D, hour: 23, minute: 50, second: 0 },
  ZONE,
);
/** 00:05 the next day in Berlin (still today in UTC). */
const AFTER_MIDNIGHT = BEFORE_MIDNIGHT + 15 * 60_000;

/** 100k prompt (40k cached) and 25k completion tokens: 0.13 at 1 / 0.5 / 2 per million. */
const CALL: FakeReply = {
  content: 'answer',
  usage: {
    prompt_tokens: 100_000,
    completion_tokens: 25_000,
    prompt_tokens_details: { cached_tokens: 40_000 },
  },
};

describe('spending limits', () => {
  let fake: FakeOpenAI | undefined;
  let workspace: string | undefined;
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await fake?.close();
    await removeWorkspace(workspace);
  });

  async function setUp(env: Record<string, string>, reply: FakeReply | ((i: number) => FakeReply) = CALL) {
    fake = await startFakeOpenAI({
      responder: (_req, i) => (typeof reply === 'function' ? reply(i) : reply),
    });
    const made = await budgetConfig(fake, env);
    workspace = made.workspace;
    const gateway = await startGateway(made.config);
    closers.push(() => gateway.close());
    return { config: made.config, gateway };
  }

  async function worker(config: Config, clock: TestClock, concurrency?: number) {
    const w = await startBudgetWorker(config, clock, concurrency);
    closers.push(() => w.close());
    return w;
  }

  it('stops a turn before the model call with one line, survives a restart, gives one 80% notice, rolls over at midnight in the zone, and /usage and `magpie usage --json` agree with the reported usage', async () => {
    const { config, gateway } = await setUp({
      MAGPIE_PRICES: 'gpt-4o-mini=1/0.5/2',
      MAGPIE_BUDGET_DAILY: '0.30',
    });
    const clock = new TestClock(BEFORE_MIDNIGHT);
    let w = await worker(config, clock);
    const sent = gateway.channel.sent;
    const replies = () => sent.filter((m) => m.kind === 'reply');
    const ask = async (content: string) => {
      const before = replies().length;
      await w.bus.publishInbound(inbound('b1', content));
      await waitFor(() => replies().length > before, 15_000, `the reply to ${content}`);
      return replies().at(-1)!.content;
    };
    // 0.13, 0.26 (past 80 % of 0.30: the owner is told), 0.39 (the third fitted its estimate in).
    for (const m of ['one', 'two', 'three']) expect(await ask(m)).toBe('answer');
    const line = "Today's budget of 0.30 is spent; magpie will answer again after midnight (Europe/Berlin).";
    expect(await ask('four')).toBe(line);
    expect(fake!.requests).toHaveLength(3);
    const notices = sent.filter((m) => m.kind === 'message' && /80%/.test(m.content));
    expect(notices.map((m) => m.content)).toEqual(["magpie has used 80% of today's budget (0.26 of 0.30)."]);
    // The line is the chat's notice, not the model's words: the session does not keep it.
    const [log] = await readdir(path.join(workspace!, 'sessions'));
    const stored = await readFile(path.join(workspace!, 'sessions', log!), 'utf8');
    expect(stored).toContain('four');
    expect(stored).not.toContain('budget of 0.30');

    // A restarted worker reads the same counters.
    await closers.splice(1, 1)[0]!();
    w = await worker(config, clock);
    expect(await ask('five')).toBe(line);
    expect(fake!.requests).toHaveLength(3);

    const usage = await ask('/usage');
    expect(usage).toContain('This chat today: 375,000 tokens (120,000 cached), 3 calls, cost 0.39');
    expect(usage).toContain('Everything today: 375,000 tokens (120,000 cached), 3 calls, cost 0.39');
    expect(usage).toContain('Limits: 0.30 a day, 30 model calls a minute per chat.');
    const cli = await promisify(execFile)(process.execPath, [BIN, 'usage', '--json', '--days', '2'], {
      cwd: os.tmpdir(),
      env: {
        PATH: process.env.PATH,
        REDIS_URL: config.redis.url,
        MAGPIE_QUEUE_PREFIX: config.redis.prefix,
        MAGPIE_WORKSPACE: workspace!,
        MAGPIE_TIMEZONE: 'Europe/Berlin',
        MAGPIE_PRICES: 'gpt-4o-mini=1/0.5/2',
        MAGPIE_BUDGET_DAILY: '0.30',
      },
    });
    const json = JSON.parse(cli.stdout);
    expect(json.limits).toEqual({ daily: 0.3, maxCallsPerMinute: 30 });
    expect(json.date).toBe(TODAY);
    expect(json.today.cost.toFixed(2)).toBe('0.39');
    expect(json.today).toMatchObject({
      calls: 3,
      promptTokens: 300_000,
      cachedTokens: 120_000,
      completionTokens: 75_000,
    });
    const day = json.days.at(-1);
    expect(day.bySession['test:b1']).toMatchObject({ cost: 0.39, calls: 3 });
    expect(day.byModel['gpt-4o-mini']).toMatchObject({ cost: 0.39, promptTokens: 300_000 });
    expect(day.refused).toEqual({ daily: 2 });

    const metrics = createMetrics(w.bus.opsReader, {
      budget: { spent: () => w.budget.spentNow(), limits: w.budget.limitValues() },
    });
    const scraped = await metrics.render();
    expect(scraped).toContain('magpie_budget_spent{agent="main",limit="daily"} 0.39');
    expect(scraped).toContain('magpie_budget_limit{agent="main",limit="daily"} 0.3');
    expect(scraped).toContain('magpie_budget_limit{agent="main",limit="per_minute"} 30');

    // Past midnight in Berlin (still the same day in UTC) the chat is answered again.
    clock.ms = AFTER_MIDNIGHT;
    expect(await ask('six')).toBe('answer');
    expect(fake!.requests).toHaveLength(4);
  });
});

describe('limits beyond one chat', () => {
  let fake: FakeOpenAI | undefined;
  let workspace: string | undefined;
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await fake?.close();
    await removeWorkspace(workspace);
  });

  async function setUp(env: Record<string, string>, reply: (i: number) => FakeReply) {
    fake = await startFakeOpenAI({ responder: (_req, i) => reply(i) });
    const made = await budgetConfig(fake, env);
    workspace = made.workspace;
    const gateway = await startGateway(made.config);
    closers.push(() => gateway.close());
    return { config: made.config, gateway };
  }

  it('three workers racing 30 chats against a limit overshoot by at most what the calls in flight were under-estimated by', async () => {
    // Each call: 10k prompt and 5k completion tokens, 0.015 at 1/1/1 per million; the estimate (the
    // prompt as counted and the 4,096-token output default) is lower, so racing calls can overshoot.
    const { config, gateway } = await setUp(
      { MAGPIE_PRICES: 'gpt-4o-mini=1/1/1', MAGPIE_BUDGET_DAILY: '0.20' },
      () => ({ content: 'answer', delayMs: 100, usage: { prompt_tokens: 10_000, completion_tokens: 5_000 } }),
    );
    const clock = new TestClock(Date.now());
    const workers: Array<Awaited<ReturnType<typeof startBudgetWorker>>> = [];
    for (let i = 0; i < 3; i++) {
      const w = await startBudgetWorker(config, clock, 4);
      closers.push(() => w.close());
      workers.push(w);
    }
    await Promise.all(
      Array.from({ length: 30 }, (_, i) => workers[i % 3]!.bus.publishInbound(inbound(`r${i}`, 'go'))),
    );
    await waitFor(
      () => gateway.channel.sent.filter((m) => m.kind === 'reply').length === 30,
      30_000,
      '30 replies',
    );
    const replies = gateway.channel.sent.filter((m) => m.kind === 'reply').map((m) => m.content);
    const answered = replies.filter((r) => r === 'answer').length;
    const refused = replies.filter((r) => r.startsWith("Today's budget of 0.20 is spent")).length;
    expect(answered + refused).toBe(30);
    expect(refused).toBeGreaterThan(0);
    expect(fake!.requests).toHaveLength(answered);
    const period = workers[0]!.budget.period();
    const counters = await workers[0]!.store.counters('any', period);
    const spent = counters.dayCostNano / 1e9;
    expect(spent).toBeCloseTo(answered * 0.015, 9);
    const estimates = workers.flatMap((w) => w.store.estimates);
    const worstUnder = 0.015 - Math.min(...estimates) / 1e9;
    const inFlight = workers.reduce((n, w) => n + w.store.maxInFlight, 0);
    expect(spent - 0.2).toBeLessThanOrEqual(inFlight * worstUnder + 1e-9);
  });

  it('skips heartbeat and scheduled agent turns at a limit, logged and counted, without a model call', async () => {
    // The call's estimate (its prompt and 4,096 output tokens) fits 12,000; what it reports passes it.
    const { config } = await setUp({ MAGPIE_BUDGET_DAILY_TOKENS: '12000' }, () => ({
      content: 'answer',
      usage: { prompt_tokens: 12_000, completion_tokens: 500 },
    }));
    const clock = new TestClock(Date.now());
    const w = await startBudgetWorker(config, clock);
    closers.push(() => w.close());
    const answered = gatewayReplies(w);
    await w.bus.publishInbound(inbound('h1', 'spend it'));
    await waitFor(async () => (await answered()) === 1, 15_000, 'the one answered call');
    // The worker trims the mailbox after it queues the reply, which may be delivered first.
    await waitFor(async () => (await w.bus.mailbox('test:h1').length()) === 0, 5_000, 'the mailbox trimmed');
    await writeFile(path.join(workspace!, 'HEARTBEAT.md'), '- check the inbox\n');
    const heartbeat = new HeartbeatRunner({
      config,
      bus: w.bus,
      agent: w.agent,
      state: w.bus.stateStore(),
      logger: silentLogger(),
      budget: w.budget,
    });
    expect(await heartbeat.run('hb-1')).toBe('skipped-budget');
    const task = {
      id: 'abc123',
      channel: 'test',
      chatId: 'h1',
      sessionKey: 'test:h1',
      message: 'summarise the news',
      mode: 'agent' as const,
      schedule: { kind: 'every' as const, everyMs: 3_600_000, tz: 'UTC', description: 'every hour' },
      createdAt: new Date().toISOString(),
    };
    expect(await fireTask(task, Date.now(), { bus: w.bus, logger: silentLogger(), budget: w.budget })).toBe(
      'skipped-budget',
    );
    expect(fake!.requests).toHaveLength(1);
    expect(await w.bus.mailbox('test:h1').length()).toBe(0);
    const [today] = await w.store.days([w.budget.period().date]);
    expect(today!.skipped).toEqual({ heartbeat: 1, cron: 1 });
  });

  it('the per-minute guard stops a loop of tool calls with one line', async () => {
    const { config, gateway } = await setUp({ MAGPIE_MAX_CALLS_PER_MINUTE: '3' }, (i) => ({
      toolCalls: [{ name: 'read_file', arguments: JSON.stringify({ path: `note-${i}.md` }) }],
    }));
    const w = await startBudgetWorker(config, new TestClock(Date.now()));
    closers.push(() => w.close());
    await w.bus.publishInbound(inbound('loop', 'read everything'));
    await waitFor(() => gateway.channel.sent.some((m) => m.kind === 'reply'), 15_000, 'the guard line');
    expect(gateway.channel.sent.find((m) => m.kind === 'reply')!.content).toBe(
      'Stopped: this chat reached 3 model calls in a minute (MAGPIE_MAX_CALLS_PER_MINUTE). Send a message to go on.',
    );
    expect(fake!.requests).toHaveLength(3);
  });
});

/** How many model calls the worker's store settled today. */
function gatewayReplies(w: Awaited<ReturnType<typeof startBudgetWorker>>) {
  return async () => {
    const [today] = await w.store.days([w.budget.period().date]);
    return today!.total.calls;
  };
}
