/**
 * Per-turn figures: LLM calls, tokens, tool calls with their times, wall time
 * and outcome. A TurnMeter collects them during a turn; `logTurn` writes the
 * one info line per turn.
 */
import type { Logger } from '../log/index.js';
import type { TokenCounts } from '../messages/token-counts.js';
import { MAX_TURN_STEPS, type TurnStep } from '../messages/turn-metrics.js';
import type { ChatResponse, Usage } from '../providers/types.js';
import type { ToolCallMetric, TurnMetrics, TurnOutcome } from './types.js';

/** Collects the figures of one turn. */
export class TurnMeter {
  readonly #sessionKey: string;
  readonly #started: number;
  readonly #now: () => number;
  #llmCalls = 0;
  #promptTokens = 0;
  #cachedTokens = 0;
  #cacheWriteTokens = 0;
  #completionTokens = 0;
  #reported = false;
  #fallbacks = 0;
  #model: string | undefined;
  readonly #models = new Map<string, number>();
  readonly #toolCalls: ToolCallMetric[] = [];
  readonly #steps: TurnStep[] = [];

  constructor(sessionKey: string, now: () => number = () => performance.now()) {
    this.#sessionKey = sessionKey;
    this.#now = now;
    this.#started = now();
  }

  /**
   * Records one call to the main model: its usage when the endpoint reported it, and which model
   * answered when the provider chooses among several.
   */
  llmCall(
    usage: Usage | undefined,
    answeredBy?: ChatResponse['answeredBy'],
    timing?: { started: number; model: string | undefined; ok?: boolean },
  ): void {
    this.#llmCalls += 1;
    if (timing)
      this.#step({
        kind: 'model',
        name: answeredBy?.model ?? timing.model ?? 'default',
        started: timing.started,
        ok: timing.ok ?? true,
        ...(usage
          ? {
              tokens: {
                input: usage.promptTokens,
                cached: usage.cachedTokens ?? 0,
                output: usage.completionTokens,
              },
            }
          : {}),
        ...(answeredBy ? { fallback: answeredBy.fallbacks > 0 } : {}),
      });
    if (answeredBy) {
      this.#model = answeredBy.model;
      this.#models.set(answeredBy.model, (this.#models.get(answeredBy.model) ?? 0) + 1);
      if (answeredBy.fallbacks > 0) this.#fallbacks += 1;
    }
    if (usage) {
      this.#reported = true;
      this.#promptTokens += usage.promptTokens;
      this.#cachedTokens += usage.cachedTokens ?? 0;
      this.#cacheWriteTokens += usage.cacheWriteTokens ?? 0;
      this.#completionTokens += usage.completionTokens;
    }
  }

  /** Records one finished tool call. */
  toolCall(name: string, ms: number, ok: boolean, started?: number): void {
    this.#toolCalls.push({ name, ms: Math.round(ms), ok });
    if (started !== undefined) this.#step({ kind: 'tool', name, started, ok });
  }

  /** The current time on the meter's clock (what `started` is measured on). */
  now(): number {
    return this.#now();
  }

  #step(step: Omit<TurnStep, 'at' | 'ms'> & { started: number }): void {
    if (this.#steps.length >= MAX_TURN_STEPS) return;
    const { started, ...rest } = step;
    this.#steps.push({
      ...rest,
      at: Math.max(0, Math.round(started - this.#started)),
      ms: Math.max(0, Math.round(this.#now() - started)),
    });
  }

  get llmCalls(): number {
    return this.#llmCalls;
  }

  /** The model that gave the latest answer of this turn, when the provider said. */
  get model(): string | undefined {
    return this.#model;
  }

  /** True once the endpoint reported usage for a call of this turn. */
  get reported(): boolean {
    return this.#reported;
  }

  /** The tokens of the turn so far. */
  counts(): TokenCounts {
    return {
      promptTokens: this.#promptTokens,
      cachedTokens: this.#cachedTokens,
      cacheWriteTokens: this.#cacheWriteTokens,
      completionTokens: this.#completionTokens,
    };
  }

  /** The figures so far, stamped with the outcome. */
  finish(outcome: TurnOutcome): TurnMetrics {
    return {
      sessionKey: this.#sessionKey,
      llmCalls: this.#llmCalls,
      promptTokens: this.#promptTokens,
      cachedTokens: this.#cachedTokens,
      cacheWriteTokens: this.#cacheWriteTokens,
      completionTokens: this.#completionTokens,
      toolCalls: [...this.#toolCalls],
      wallMs: Math.round(this.#now() - this.#started),
      outcome,
      ...(this.#steps.length > 0 ? { steps: [...this.#steps] } : {}),
      ...(this.#model === undefined
        ? {}
        : { model: this.#model, fallbacks: this.#fallbacks, models: Object.fromEntries(this.#models) }),
    };
  }
}

/** Writes the turn's one info line (the logger is a child bound to `{ session }`). */
export function logTurn(logger: Logger, metrics: TurnMetrics): void {
  const { sessionKey: _session, ...figures } = metrics;
  logger.info(
    { turn: figures },
    `turn ${metrics.outcome}: ${metrics.llmCalls} LLM call(s), ${metrics.toolCalls.length} tool call(s), ${metrics.wallMs} ms`,
  );
}
