/**
 * Benchmark: how far three workers racing near a spending limit overshoot it.
 * Starts its own redis-server and the fake OpenAI server, then three workers
 * in this process (each its own Bus connection, Budget and agent from
 * buildAgent, over the real Redis store), 30 chats sending at once against
 * MAGPIE_BUDGET_DAILY. Each model call reports 10k prompt and 5k completion
 * tokens (0.015 at 1/1/1 per million), more than its estimate (the prompt as
 * counted plus the 4,096-token output default), so racing calls can pass the
 * limit by what they were under-estimated. Prints one JSON object:
 *
 * - `runs`: per run, the limit, calls answered and refused, the spend, the
 *   overshoot (spend − limit, ≤ 0: none), the most calls in flight at once and
 *   the bound (in flight × the worst under-estimate);
 * - `worstOvershoot` and `worstOvershootCalls` (as a share of one call's cost).
 *
 *   npx tsx bench/budget-race.ts [--runs 5] [--chats 30] [--concurrency 4]
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { buildAgent } from '../src/app/build-agent.js';
import { parseConfig } from '../src/app/config.js';
import { Budget } from '../src/budget/budget.js';
import { RedisBudgetStore } from '../src/bus/budget-store.js';
import { Bus } from '../src/bus/bus.js';
import { silentLogger } from '../src/log/index.js';
import { TurnWorker } from '../src/worker/turn-worker.js';
import { startFakeOpenAI } from '../test/fakes/openai-server.js';
import { startRedis } from '../test/fakes/redis-server.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    chats: { type: 'string', default: '30' },
    concurrency: { type: 'string', default: '4' },
  },
});
const runs = Number(values.runs);
const chats = Number(values.chats);
const concurrency = Number(values.concurrency);
const CALL_COST = 0.015;

/** A real store that notes each call's estimate and the calls in flight. */
class CountingStore extends RedisBudgetStore {
  estimates: number[] = [];
  inFlight = 0;
  maxInFlight = 0;
  override async reserve(...args: Parameters<RedisBudgetStore['reserve']>) {
    const result = await super.reserve(...args);
    if (result.ok) {
      this.estimates.push(args[2].costNano / 1e9);
      this.maxInFlight = Math.max(this.maxInFlight, ++this.inFlight);
    }
    return result;
  }
  override async settle(...args: Parameters<RedisBudgetStore['settle']>) {
    this.inFlight -= 1;
    return super.settle(...args);
  }
}

const redis = await startRedis();
const openai = await startFakeOpenAI({
  responder: () => ({
    content: 'ok',
    delayMs: 50,
    usage: { prompt_tokens: 10_000, completion_tokens: 5_000 },
  }),
});
const workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-bench-budget-'));
const logger = silentLogger();
const results = [];
try {
  for (let run = 0; run < runs; run++) {
    // A limit that falls between calls differently each run.
    const limit = Math.round((0.1 + run * 0.0373) * 1e4) / 1e4;
    const config = parseConfig({
      REDIS_URL: redis.url,
      MAGPIE_QUEUE_PREFIX: `bench-${randomUUID()}`,
      MAGPIE_WORKSPACE: workspace,
      OPENAI_API_KEY: 'bench',
      OPENAI_BASE_URL: openai.baseURL,
      MAGPIE_PRICES: 'gpt-4o-mini=1/1/1',
      MAGPIE_BUDGET_DAILY: String(limit),
    });
    const workers: Array<{ bus: Bus; store: CountingStore; budget: Budget; worker: TurnWorker }> = [];
    for (let i = 0; i < 3; i++) {
      const bus = await Bus.connect({ config, logger, patient: true });
      const store = new CountingStore(bus.redis, bus.prefix);
      const budget = new Budget({ config: config.budget, store, timezone: config.timezone, logger });
      const { agent } = await buildAgent({ config, logger, outbound: { publish: async () => {} }, budget });
      const worker = new TurnWorker({ bus, agent, logger, concurrency });
      await worker.start();
      workers.push({ bus, store, budget, worker });
    }
    const done = new Set<string>();
    const outbound = workers[0]!.bus;
    const before = openai.requests.length;
    await Promise.all(
      Array.from({ length: chats }, (_, i) =>
        workers[i % 3]!.bus.publishInbound({
          id: `bench:${run}:${i}`,
          channel: 'cli',
          chatId: `race-${i}`,
          senderId: 'bench',
          content: 'go',
        }),
      ),
    );
    // Every chat ends with an answer or the limit's line; both settle or refuse in the store.
    while (done.size < chats) {
      await new Promise((r) => setTimeout(r, 50));
      for (let i = 0; i < chats; i++)
        if ((await outbound.mailbox(`cli:race-${i}`).length()) === 0) done.add(String(i));
      if (workers.some((w) => w.store.inFlight > 0)) done.clear();
    }
    const answered = openai.requests.length - before;
    const spent = (await workers[0]!.budget.spentNow()).daily ?? 0;
    const estimates = workers.flatMap((w) => w.store.estimates);
    const inFlight = workers.reduce((n, w) => n + w.store.maxInFlight, 0);
    const worstUnder = CALL_COST - Math.min(...estimates);
    results.push({
      limit,
      answered,
      refused: chats - answered,
      spent: Math.round(spent * 1e6) / 1e6,
      overshoot: Math.round((spent - limit) * 1e6) / 1e6,
      maxInFlight: inFlight,
      bound: Math.round(inFlight * worstUnder * 1e6) / 1e6,
      estimate: Math.round(Math.min(...estimates) * 1e6) / 1e6,
    });
    for (const w of workers) {
      await w.worker.close();
      await w.bus.close();
    }
  }
  const worst = Math.max(0, ...results.map((r) => r.overshoot));
  process.stdout.write(
    `${JSON.stringify(
      {
        workers: 3,
        chats,
        concurrency,
        callCost: CALL_COST,
        runs: results,
        worstOvershoot: worst,
        worstOvershootCalls: Math.round((worst / CALL_COST) * 100) / 100,
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await openai.close();
  await redis.stop();
  rmSync(workspace, { recursive: true, force: true });
}
