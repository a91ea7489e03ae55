/**
 * Token use on real Redis: the recorder adds each finished turn to the day's
 * and the session's usage (cached tokens included); status (JSON and human
 * form) and /metrics read them back, with costs when prices are set.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TurnMetrics } from '../../../src/agent/types.js';
import { Bus } from '../../../src/bus/bus.js';
import { opsKeys } from '../../../src/bus/keys.js';
import { TurnRecorder } from '../../../src/bus/turn-recorder.js';
import { readTurns } from '../../../src/bus/turn-records.js';
import { readUsage, USAGE_DAYS_KEPT } from '../../../src/bus/usage-records.js';
import { silentLogger } from '../../../src/log/index.js';
import { createMetrics } from '../../../src/ops/metrics.js';
import { collectStatus } from '../../../src/ops/status.js';
import { formatStatus } from '../../../src/ops/status-format.js';
import { testConfig } from '../bus/helpers.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const prices = { input: 2, cachedInput: 0.5, output: 8 };

function metrics(session: string, prompt: number, cached: number, out: number): { metrics: TurnMetrics } {
  return {
    metrics: {
      sessionKey: session,
      llmCalls: 1,
      promptTokens: prompt,
      cachedTokens: cached,
      cacheWriteTokens: 0,
      completionTokens: out,
      toolCalls: [],
      wallMs: 800,
      outcome: 'ok',
    },
  };
}

async function setup() {
  const config = testConfig();
  const bus = await Bus.connect({ config, logger: silentLogger() });
  closers.push(() => bus.close());
  let clock = new Date('2026-11-22T22:30:00Z');
  const recorder = new TurnRecorder({
    redis: bus.redis,
    prefix: bus.prefix,
    worker: 'worker-usage',
    logger: silentLogger(),
    timezone: 'Asia/Tokyo', // UTC+9: 22:30Z is 07:30 on the 23rd
    now: () => clock,
  });
  return { config, bus, recorder, setClock: (d: Date) => (clock = d) };
}

describe('token use', () => {
  it('adds each turn to its day (in the configured zone) and its session, cached tokens included', async () => {
    const { bus, recorder, setClock } = await setup();
    await recorder.finished('t1', metrics('telegram:42', 10_000, 8_000, 300));
    await recorder.finished('t2', metrics('telegram:42', 12_000, 10_000, 200));
    await recorder.finished('t3', metrics('cli:a|prompt', 1_000, 0, 50));
    const now = new Date('2026-11-22T22:31:00Z');

    const usage = await readUsage(bus.redis, bus.prefix, { timezone: 'Asia/Tokyo', prices, now });
    expect(usage.date).toBe('2026-11-23');
    expect(usage.today).toMatchObject({
      promptTokens: 23_000,
      cachedTokens: 18_000,
      completionTokens: 550,
      turns: 3,
    });
    // (5,000 uncached × 2 + 18,000 cached × 0.5 + 550 × 8) / 1e6
    expect(usage.today.cost).toBeCloseTo(0.0234, 6);
    expect(usage.sessions.map((s) => s.session)).toEqual(['telegram:42', 'cli:a|prompt']);
    expect(usage.sessions[0]!.today).toMatchObject({ promptTokens: 22_000, cachedTokens: 18_000, turns: 2 });
    expect(usage.sessions[1]!.today).toMatchObject({ promptTokens: 1_000, cachedTokens: 0, turns: 1 });
    expect(usage.total).toMatchObject({ promptTokens: 23_000, cachedTokens: 18_000, turns: 3 });
    expect(usage.prices).toEqual(prices);
    const ttl = await bus.redis.ttl(opsKeys.usageDay(bus.prefix, '2026-11-23'));
    expect(ttl).toBeGreaterThan(USAGE_DAYS_KEPT * 86_400 - 60);
    expect(ttl).toBeLessThanOrEqual(USAGE_DAYS_KEPT * 86_400);

    // Past midnight in Tokyo: a new day, while the session's totals keep growing.
    setClock(new Date('2026-11-23T15:05:00Z'));
    await recorder.finished('t4', metrics('telegram:42', 4_000, 3_000, 100));
    const next = await readUsage(bus.redis, bus.prefix, {
      timezone: 'Asia/Tokyo',
      now: new Date('2026-11-23T15:06:00Z'),
    });
    expect(next.date).toBe('2026-11-24');
    expect(next.today).toMatchObject({ promptTokens: 4_000, cachedTokens: 3_000, turns: 1 });
    expect(next.today.cost).toBeUndefined();
    expect(next.sessions).toEqual([
      {
        session: 'telegram:42',
        today: expect.objectContaining({ promptTokens: 4_000, turns: 1 }),
        total: expect.objectContaining({ promptTokens: 26_000, cachedTokens: 21_000, turns: 3 }),
      },
    ]);
    expect(next.total).toMatchObject({ promptTokens: 27_000, cachedTokens: 21_000, turns: 4 });
  });

  it('keeps cached tokens in the turn record; records written before them read as 0', async () => {
    const { bus, recorder } = await setup();
    await recorder.finished('t1', metrics('telegram:42', 5_000, 4_096, 10));
    const old = { turn: 'old', session: 'cli:x', worker: 'w', at: 1, wallMs: 5, llmCalls: 1 };
    await bus.redis.xadd(
      opsKeys.turns(bus.prefix),
      '*',
      'turn',
      JSON.stringify({ ...old, promptTokens: 9, completionTokens: 1, toolCalls: [], outcome: 'ok' }),
    );
    // Newest first: the hand-written old-style record, then the recorded turn.
    const [oldStyle, recorded] = await readTurns(bus.redis, bus.prefix);
    expect(recorded).toMatchObject({ promptTokens: 5_000, cachedTokens: 4_096, cacheWriteTokens: 0 });
    expect(oldStyle).toMatchObject({ turn: 'old', cachedTokens: 0, cacheWriteTokens: 0 });
  });

  it('shows today, since the start and per session in magpie status (JSON and human form) and /metrics', async () => {
    const { config, bus } = await setup();
    const recorder = new TurnRecorder({
      redis: bus.redis,
      prefix: bus.prefix,
      worker: 'worker-usage',
      logger: silentLogger(),
      timezone: 'Europe/Lisbon',
    });
    await recorder.finished('t1', metrics('telegram:42', 10_000, 8_000, 300));
    await recorder.finished('t2', metrics('discord:7', 2_000, 0, 100));
    const report = await collectStatus({
      reader: bus.opsReader,
      url: bus.url,
      prefix: bus.prefix,
      workspace: config.workspace,
      timezone: 'Europe/Lisbon',
      prices,
    });
    expect(report.usage.timezone).toBe('Europe/Lisbon');
    expect(report.usage.today).toMatchObject({ promptTokens: 12_000, cachedTokens: 8_000, turns: 2 });
    expect(report.usage.sessions.map((s) => [s.session, s.today.cachedTokens])).toEqual([
      ['telegram:42', 8_000],
      ['discord:7', 0],
    ]);
    const human = formatStatus(report);
    expect(human).toMatch(
      /^Tokens +today \(\d{4}-\d\d-\d\d, Europe\/Lisbon\): 12,000 in \(8,000 cached, 67%\), 400 out, 2 turns, cost ≈ 0\.0152$/m,
    );
    expect(human).toMatch(/^ +since the start: 12,000 in \(8,000 cached, 67%\)/m);
    expect(human).toMatch(/^ {2}telegram:42 +today 10,000 in \(8,000 cached, 80%\), 300 out, 1 turn, cost/m);

    const text = await createMetrics(bus.opsReader, { prices }).render();
    expect(text).toMatch(/^magpie_llm_tokens_total\{agent="main",kind="prompt"\} 12000$/m);
    expect(text).toMatch(/^magpie_llm_tokens_total\{agent="main",kind="cached"\} 8000$/m);
    expect(text).toMatch(/^magpie_llm_tokens_total\{agent="main",kind="cache_write"\} 0$/m);
    expect(text).toMatch(/^magpie_llm_tokens_total\{agent="main",kind="completion"\} 400$/m);
    expect(text).toMatch(/^magpie_llm_cost_total\{agent="main"\} 0\.0152$/m);
    expect(await createMetrics(bus.opsReader).render()).not.toContain('magpie_llm_cost_total');
  });
});
