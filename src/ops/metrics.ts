/**
 * Prometheus metrics for `/metrics`, computed at scrape time from Redis (the
 * totals hash the workers keep, queue depths, heartbeats), so any process can
 * serve them. Each call builds its own prom-client Registry: nothing touches
 * the global default registry. Tokens are counted by kind (prompt, of it
 * cached and cache-written, completion); with prices, an estimated cost too.
 */
import { Counter, Gauge, type Metric, Registry } from 'prom-client';
import { LATENCY_BUCKETS_S, totalsFields } from '../bus/keys.js';
import { estimateCost, type TokenPrices } from '../messages/token-counts.js';
import type { OpsReader } from './ports.js';

export interface MagpieMetrics {
  registry: Registry;
  /** The text exposition format. */
  render(): Promise<string>;
  contentType: string;
}

export interface MetricsOptions {
  /** Prices per million tokens (MAGPIE_PRICE_*): adds `magpie_llm_cost_total`. @defaultValue none */
  prices?: TokenPrices;
  /** The spending limits: adds `magpie_budget_spent` and `magpie_budget_limit`. @defaultValue none */
  budget?: BudgetGauges;
}

/** What the budget gauges read (src/budget's Budget gives it). */
export interface BudgetGauges {
  /** What counts against each limit now (`daily`, `monthly` in money, `daily_tokens`), in-flight calls included. */
  spent(): Promise<Record<string, number>>;
  /** The limits set, by the same names (money in the prices' currency). */
  limits: Readonly<Record<string, number>>;
}

/** Token kinds of `magpie_llm_tokens_total` and the totals field each reads. */
const TOKEN_KINDS = [
  ['prompt', totalsFields.promptTokens],
  ['cached', totalsFields.cachedTokens],
  ['cache_write', totalsFields.cacheWriteTokens],
  ['completion', totalsFields.completionTokens],
] as const;

/** The totals hash as last read (once per scrape, before the collectors run). */
type Totals = () => Record<string, string>;

/** Builds a registry whose metrics read the bus (through `reader`) on each scrape. */
export function createMetrics(reader: OpsReader, options: MetricsOptions = {}): MagpieMetrics {
  const registry = new Registry();
  let totals: Record<string, string> = {};
  // Read once per scrape, before the collectors run (see render()).
  const refresh = async () => {
    totals = await reader.totals();
  };
  const read: Totals = () => totals;
  registerTurnAndTokenMetrics(registry, read, options.prices);
  registerModelMetrics(registry, read, reader);
  registerToolMetrics(registry, read);
  registerLiveMetrics(registry, reader);
  registerApprovalMetrics(registry, read);
  if (options.budget) registerBudgetMetrics(registry, options.budget);
  return {
    registry,
    contentType: registry.contentType,
    async render() {
      await refresh();
      return registry.metrics();
    },
  };
}

/** A counter showing one field of the totals hash. */
function totalsCounter(registry: Registry, totals: Totals, name: string, help: string, field: string) {
  return new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(Number(totals()[field] ?? 0));
    },
  });
}

/** Turns by outcome, errors, tokens (by kind) and, with prices, their estimated cost. */
function registerTurnAndTokenMetrics(registry: Registry, totals: Totals, prices: TokenPrices | undefined) {
  const total = (field: string) => Number(totals()[field] ?? 0);
  new Counter({
    name: 'magpie_turns_total',
    help: 'Finished turns by outcome (ok, error, cancelled, ...)',
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [field, value] of Object.entries(totals())) {
        if (field.startsWith('outcome:'))
          this.inc({ outcome: field.slice('outcome:'.length) }, Number(value));
      }
    },
  });
  const counter = (name: string, help: string, field: string) =>
    totalsCounter(registry, totals, name, help, field);
  counter('magpie_turn_errors_total', 'Turns that ended in an error', totalsFields.outcome('error'));
  counter(
    'magpie_llm_prompt_tokens_total',
    'Tokens sent to the model (prompt, as reported)',
    totalsFields.promptTokens,
  );
  counter(
    'magpie_llm_completion_tokens_total',
    'Tokens received from the model',
    totalsFields.completionTokens,
  );
  new Counter({
    name: 'magpie_llm_tokens_total',
    help: 'Tokens by kind: prompt (all of it), cached (prompt tokens served from the provider cache), cache_write, completion',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [kind, field] of TOKEN_KINDS) this.inc({ kind }, total(field));
    },
  });
  if (prices) {
    new Counter({
      name: 'magpie_llm_cost_total',
      help: 'Estimated cost of the tokens at MAGPIE_PRICE_* (in the prices’ currency)',
      registers: [registry],
      collect() {
        this.reset();
        const counts = {
          promptTokens: total(totalsFields.promptTokens),
          cachedTokens: total(totalsFields.cachedTokens),
          cacheWriteTokens: total(totalsFields.cacheWriteTokens),
          completionTokens: total(totalsFields.completionTokens),
        };
        this.inc(estimateCost(counts, prices));
      },
    });
  }
}

/** LLM calls, fallbacks, calls by the answering model, and the cool-downs of failed models. */
function registerModelMetrics(registry: Registry, totals: Totals, reader: OpsReader) {
  totalsCounter(registry, totals, 'magpie_llm_calls_total', 'Calls to the main model', totalsFields.llmCalls);
  totalsCounter(
    registry,
    totals,
    'magpie_llm_fallbacks_total',
    "LLM calls answered by a fallback model (not the chat's first choice)",
    totalsFields.fallbacks,
  );
  new Counter({
    name: 'magpie_llm_calls_by_model_total',
    help: 'LLM calls by the model that answered them (its id in MAGPIE_MODEL / MAGPIE_FALLBACK_MODELS)',
    labelNames: ['model'],
    registers: [registry],
    collect() {
      this.reset();
      const prefix = totalsFields.modelCalls('');
      for (const [field, value] of Object.entries(totals())) {
        if (field.startsWith(prefix)) this.inc({ model: field.slice(prefix.length) }, Number(value));
      }
    },
  });
  new Gauge({
    name: 'magpie_llm_cooldown_seconds',
    help: 'Seconds a failed model or endpoint still rests before it is tried again (0: a try is under way)',
    labelNames: ['what'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const entry of await reader.cooldowns()) {
        this.set({ what: entry.label }, Math.ceil(entry.leftMs / 1000));
      }
    },
  });
}

/** Tool calls and failures, and the turn latency histogram. */
function registerToolMetrics(registry: Registry, totals: Totals) {
  totalsCounter(registry, totals, 'magpie_tool_calls_total', 'Tool calls', totalsFields.toolCalls);
  totalsCounter(
    registry,
    totals,
    'magpie_tool_failures_total',
    'Tool calls that failed',
    totalsFields.toolFailures,
  );
  registry.registerMetric(latencyHistogram(totals) as unknown as Metric);
}

/** Approval questions asked and how they were settled (MAGPIE_APPROVAL). */
function registerApprovalMetrics(registry: Registry, totals: Totals) {
  new Counter({
    name: 'magpie_approvals_total',
    help: 'Approval questions: asked, and settled as allowed, denied, timeout or cancelled',
    labelNames: ['decision'],
    registers: [registry],
    collect() {
      this.reset();
      for (const decision of ['asked', 'allowed', 'denied', 'timeout', 'cancelled']) {
        this.inc({ decision }, Number(totals()[totalsFields.approvals(decision)] ?? 0));
      }
    },
  });
}

/** What runs now: queue depths, live workers, running turns (read from Redis at each scrape). */
function registerLiveMetrics(registry: Registry, reader: OpsReader) {
  new Gauge({
    name: 'magpie_queue_jobs',
    help: 'Jobs per queue and state',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      this.reset();
      const depths = await reader.queueDepths(await reader.queues());
      for (const d of depths) {
        for (const state of ['waiting', 'active', 'delayed', 'failed'] as const) {
          this.set({ queue: d.name, state }, d[state]);
        }
      }
    },
  });
  new Gauge({
    name: 'magpie_workers_alive',
    help: 'Worker processes with a live heartbeat',
    registers: [registry],
    async collect() {
      this.set((await reader.workers()).length);
    },
  });
  new Gauge({
    name: 'magpie_turns_running',
    help: 'Turns running now (in workers that are alive)',
    registers: [registry],
    async collect() {
      const [running, workers] = await Promise.all([reader.running(), reader.workers()]);
      const alive = new Set(workers.map((w) => w.id));
      this.set(running.filter((r) => alive.has(r.worker)).length);
    },
  });
}

/**
 * The turn latency histogram from the cumulative bucket counts in the totals
 * hash: prom-client's Histogram only counts observations made in this
 * process, so this metric hands the registry its values directly.
 */
function latencyHistogram(totals: () => Record<string, string>) {
  const name = 'magpie_turn_duration_seconds';
  const help = 'Wall time of turns';
  return {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    async get() {
      const t = totals();
      const n = (field: string) => Number(t[field] ?? 0);
      const count = n(totalsFields.latencyCount);
      return {
        name,
        help,
        type: 'histogram',
        aggregator: 'sum',
        values: [
          ...LATENCY_BUCKETS_S.map((le) => ({
            metricName: `${name}_bucket`,
            labels: { le },
            value: n(totalsFields.latencyBucket(le)),
          })),
          { metricName: `${name}_bucket`, labels: { le: '+Inf' }, value: count },
          { metricName: `${name}_sum`, labels: {}, value: n(totalsFields.latencySumMs) / 1000 },
          { metricName: `${name}_count`, labels: {}, value: count },
        ],
      };
    },
    reset() {},
  };
}

/** Spend against each limit now, and the limits. */
function registerBudgetMetrics(registry: Registry, budget: BudgetGauges) {
  new Gauge({
    name: 'magpie_budget_spent',
    help: 'Spent in the current period by limit: daily and monthly cost (prices’ currency), daily_tokens',
    labelNames: ['limit'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [limit, value] of Object.entries(await budget.spent())) this.set({ limit }, value);
    },
  });
  new Gauge({
    name: 'magpie_budget_limit',
    help: 'Spending limits set (MAGPIE_BUDGET_*, MAGPIE_MAX_CALLS_PER_MINUTE as per_minute)',
    labelNames: ['limit'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [limit, value] of Object.entries(budget.limits)) this.set({ limit }, value);
    },
  });
}
