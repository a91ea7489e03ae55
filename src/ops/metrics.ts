/**
 * Prometheus metrics for `/metrics`, computed at scrape time from Redis (the
 * totals hash the workers keep, queue depths, heartbeats), so any process can
 * serve them. Each call builds its own prom-client Registry: nothing touches
 * the global default registry. Tokens are counted by kind (prompt, of it
 * cached and cache-written, completion); with prices, an estimated cost too.
 * Every sample carries an `agent` label (`main`, and each agent of
 * agents.json): each agent's figures are read from its own bus prefix.
 */
import { Counter, Gauge, type Metric, Registry } from 'prom-client';
import { MAIN_AGENT } from '../agents/spec.js';
import { LATENCY_BUCKETS_S, totalsFields } from '../bus/keys.js';
import { estimateCost, type TokenPrices } from '../messages/token-counts.js';
import { voiceTotalsFields } from '../voice/voice-replies.js';
import type { OpsReader } from './ports.js';

export interface MagpieMetrics {
  registry: Registry;
  /** The text exposition format. */
  render(): Promise<string>;
  contentType: string;
}

/** One agent whose bus the metrics read. */
export interface MetricsAgent {
  /** Its id in agents.json: the `agent` label of its samples. */
  id: string;
  reader: OpsReader;
  /** Its spending limits: adds its `magpie_budget_spent` and `magpie_budget_limit`. @defaultValue none */
  budget?: BudgetGauges;
}

export interface MetricsOptions {
  /** Prices per million tokens (MAGPIE_PRICE_*): adds `magpie_llm_cost_total`. @defaultValue none */
  prices?: TokenPrices;
  /** Main's spending limits: adds `magpie_budget_spent` and `magpie_budget_limit`. @defaultValue none */
  budget?: BudgetGauges;
  /** The other agents of agents.json, each read from its own bus. @defaultValue none: main alone */
  agents?: readonly MetricsAgent[];
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

/** Each agent's totals hash as last read (once per scrape, before the collectors run). */
type Totals = (agent: string) => Record<string, string>;

/**
 * Builds a registry whose metrics read the bus (through `reader`, main's, and
 * each of `options.agents`) on each scrape.
 *
 * @example createMetrics(bus.opsReader, { agents: [{ id: 'work', reader: workBus.opsReader }] })
 */
export function createMetrics(reader: OpsReader, options: MetricsOptions = {}): MagpieMetrics {
  const agents: MetricsAgent[] = [
    { id: MAIN_AGENT, reader, ...(options.budget ? { budget: options.budget } : {}) },
    ...(options.agents ?? []),
  ];
  const registry = new Registry();
  let totals = new Map<string, Record<string, string>>();
  // Read once per scrape, before the collectors run (see render()).
  const refresh = async () => {
    const read = await Promise.all(agents.map(async (a) => [a.id, await a.reader.totals()] as const));
    totals = new Map(read);
  };
  const read: Totals = (agent) => totals.get(agent) ?? {};
  const ids = agents.map((a) => a.id);
  registerTurnAndTokenMetrics(registry, ids, read, options.prices);
  registerModelMetrics(registry, agents, read);
  registerToolMetrics(registry, ids, read);
  registerLiveMetrics(registry, agents);
  registerApprovalMetrics(registry, ids, read);
  registerVoiceMetrics(registry, ids, read);
  const budgets = agents.filter((a): a is MetricsAgent & { budget: BudgetGauges } => a.budget !== undefined);
  if (budgets.length > 0) registerBudgetMetrics(registry, budgets);
  return {
    registry,
    contentType: registry.contentType,
    async render() {
      await refresh();
      return registry.metrics();
    },
  };
}

/** A counter showing one field of each agent's totals hash. */
function totalsCounter(
  registry: Registry,
  agents: readonly string[],
  totals: Totals,
  name: string,
  help: string,
  field: string,
) {
  return new Counter({
    name,
    help,
    labelNames: ['agent'],
    registers: [registry],
    collect() {
      this.reset();
      for (const agent of agents) this.inc({ agent }, Number(totals(agent)[field] ?? 0));
    },
  });
}

/** Spoken replies (src/voice): seconds and characters spoken, replies that could not be spoken. */
function registerVoiceMetrics(registry: Registry, agents: readonly string[], totals: Totals) {
  const { seconds, chars, failed } = voiceTotalsFields;
  totalsCounter(
    registry,
    agents,
    totals,
    'magpie_voice_seconds_total',
    'Seconds of speech sent as spoken replies',
    seconds,
  );
  totalsCounter(
    registry,
    agents,
    totals,
    'magpie_voice_characters_total',
    'Characters spoken (what MAGPIE_PRICE_TTS prices)',
    chars,
  );
  totalsCounter(
    registry,
    agents,
    totals,
    'magpie_voice_failures_total',
    'Replies not spoken because the speech engine failed (the text went out)',
    failed,
  );
}

/** Turns by outcome, errors, tokens (by kind) and, with prices, their estimated cost. */
function registerTurnAndTokenMetrics(
  registry: Registry,
  agents: readonly string[],
  totals: Totals,
  prices: TokenPrices | undefined,
) {
  const total = (agent: string, field: string) => Number(totals(agent)[field] ?? 0);
  new Counter({
    name: 'magpie_turns_total',
    help: 'Finished turns by outcome (ok, error, cancelled, ...)',
    labelNames: ['agent', 'outcome'],
    registers: [registry],
    collect() {
      this.reset();
      for (const agent of agents) {
        for (const [field, value] of Object.entries(totals(agent))) {
          if (field.startsWith('outcome:'))
            this.inc({ agent, outcome: field.slice('outcome:'.length) }, Number(value));
        }
      }
    },
  });
  const counter = (name: string, help: string, field: string) =>
    totalsCounter(registry, agents, totals, name, help, field);
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
    labelNames: ['agent', 'kind'],
    registers: [registry],
    collect() {
      this.reset();
      for (const agent of agents)
        for (const [kind, field] of TOKEN_KINDS) this.inc({ agent, kind }, total(agent, field));
    },
  });
  if (prices) {
    new Counter({
      name: 'magpie_llm_cost_total',
      help: 'Estimated cost of the tokens at MAGPIE_PRICE_* (in the prices’ currency)',
      labelNames: ['agent'],
      registers: [registry],
      collect() {
        this.reset();
        for (const agent of agents) {
          const counts = {
            promptTokens: total(agent, totalsFields.promptTokens),
            cachedTokens: total(agent, totalsFields.cachedTokens),
            cacheWriteTokens: total(agent, totalsFields.cacheWriteTokens),
            completionTokens: total(agent, totalsFields.completionTokens),
          };
          this.inc({ agent }, estimateCost(counts, prices));
        }
      },
    });
  }
}

/** LLM calls, fallbacks, calls by the answering model, and the cool-downs of failed models. */
function registerModelMetrics(registry: Registry, agents: readonly MetricsAgent[], totals: Totals) {
  const ids = agents.map((a) => a.id);
  totalsCounter(
    registry,
    ids,
    totals,
    'magpie_llm_calls_total',
    'Calls to the main model',
    totalsFields.llmCalls,
  );
  totalsCounter(
    registry,
    ids,
    totals,
    'magpie_llm_fallbacks_total',
    "LLM calls answered by a fallback model (not the chat's first choice)",
    totalsFields.fallbacks,
  );
  new Counter({
    name: 'magpie_llm_calls_by_model_total',
    help: 'LLM calls by the model that answered them (its id in MAGPIE_MODEL / MAGPIE_FALLBACK_MODELS)',
    labelNames: ['agent', 'model'],
    registers: [registry],
    collect() {
      this.reset();
      const prefix = totalsFields.modelCalls('');
      for (const agent of ids) {
        for (const [field, value] of Object.entries(totals(agent))) {
          if (field.startsWith(prefix)) this.inc({ agent, model: field.slice(prefix.length) }, Number(value));
        }
      }
    },
  });
  new Gauge({
    name: 'magpie_llm_cooldown_seconds',
    help: 'Seconds a failed model or endpoint still rests before it is tried again (0: a try is under way)',
    labelNames: ['agent', 'what'],
    registers: [registry],
    async collect() {
      this.reset();
      const all = await Promise.all(agents.map((a) => a.reader.cooldowns()));
      for (const [i, entries] of all.entries()) {
        const agent = ids[i] as string;
        for (const entry of entries) this.set({ agent, what: entry.label }, Math.ceil(entry.leftMs / 1000));
      }
    },
  });
}

/** Tool calls and failures, and the turn latency histogram. */
function registerToolMetrics(registry: Registry, agents: readonly string[], totals: Totals) {
  totalsCounter(registry, agents, totals, 'magpie_tool_calls_total', 'Tool calls', totalsFields.toolCalls);
  totalsCounter(
    registry,
    agents,
    totals,
    'magpie_tool_failures_total',
    'Tool calls that failed',
    totalsFields.toolFailures,
  );
  registry.registerMetric(latencyHistogram(agents, totals) as unknown as Metric);
}

/** Approval questions asked and how they were settled (MAGPIE_APPROVAL). */
function registerApprovalMetrics(registry: Registry, agents: readonly string[], totals: Totals) {
  new Counter({
    name: 'magpie_approvals_total',
    help: 'Approval questions: asked, and settled as allowed, denied, timeout or cancelled',
    labelNames: ['agent', 'decision'],
    registers: [registry],
    collect() {
      this.reset();
      for (const agent of agents) {
        for (const decision of ['asked', 'allowed', 'denied', 'timeout', 'cancelled']) {
          this.inc({ agent, decision }, Number(totals(agent)[totalsFields.approvals(decision)] ?? 0));
        }
      }
    },
  });
}

/** What runs now: queue depths, live workers, running turns (read from Redis at each scrape). */
function registerLiveMetrics(registry: Registry, agents: readonly MetricsAgent[]) {
  new Gauge({
    name: 'magpie_queue_jobs',
    help: 'Jobs per queue and state',
    labelNames: ['agent', 'queue', 'state'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const { id: agent, reader } of agents) {
        const depths = await reader.queueDepths(await reader.queues());
        for (const d of depths) {
          for (const state of ['waiting', 'active', 'delayed', 'failed'] as const) {
            this.set({ agent, queue: d.name, state }, d[state]);
          }
        }
      }
    },
  });
  new Gauge({
    name: 'magpie_workers_alive',
    help: 'Worker processes with a live heartbeat',
    labelNames: ['agent'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const { id: agent, reader } of agents) this.set({ agent }, (await reader.workers()).length);
    },
  });
  new Gauge({
    name: 'magpie_turns_running',
    help: 'Turns running now (in workers that are alive)',
    labelNames: ['agent'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const { id: agent, reader } of agents) {
        const [running, workers] = await Promise.all([reader.running(), reader.workers()]);
        const alive = new Set(workers.map((w) => w.id));
        this.set({ agent }, running.filter((r) => alive.has(r.worker)).length);
      }
    },
  });
}

/**
 * The turn latency histogram from the cumulative bucket counts in each
 * agent's totals hash: prom-client's Histogram only counts observations made
 * in this process, so this metric hands the registry its values directly.
 */
function latencyHistogram(agents: readonly string[], totals: Totals) {
  const name = 'magpie_turn_duration_seconds';
  const help = 'Wall time of turns';
  const valuesOf = (agent: string) => {
    const t = totals(agent);
    const n = (field: string) => Number(t[field] ?? 0);
    const count = n(totalsFields.latencyCount);
    return [
      ...LATENCY_BUCKETS_S.map((le) => ({
        metricName: `${name}_bucket`,
        labels: { agent, le },
        value: n(totalsFields.latencyBucket(le)),
      })),
      { metricName: `${name}_bucket`, labels: { agent, le: '+Inf' }, value: count },
      { metricName: `${name}_sum`, labels: { agent }, value: n(totalsFields.latencySumMs) / 1000 },
      { metricName: `${name}_count`, labels: { agent }, value: count },
    ];
  };
  return {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    async get() {
      return { name, help, type: 'histogram', aggregator: 'sum', values: agents.flatMap(valuesOf) };
    },
    reset() {},
  };
}

/** Spend against each limit now, and the limits. */
function registerBudgetMetrics(
  registry: Registry,
  agents: ReadonlyArray<{ id: string; budget: BudgetGauges }>,
) {
  new Gauge({
    name: 'magpie_budget_spent',
    help: 'Spent in the current period by limit: daily and monthly cost (prices’ currency), daily_tokens',
    labelNames: ['agent', 'limit'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const { id: agent, budget } of agents)
        for (const [limit, value] of Object.entries(await budget.spent())) this.set({ agent, limit }, value);
    },
  });
  new Gauge({
    name: 'magpie_budget_limit',
    help: 'Spending limits set (MAGPIE_BUDGET_*, MAGPIE_MAX_CALLS_PER_MINUTE as per_minute)',
    labelNames: ['agent', 'limit'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { id: agent, budget } of agents)
        for (const [limit, value] of Object.entries(budget.limits)) this.set({ agent, limit }, value);
    },
  });
}
