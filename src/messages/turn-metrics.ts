/**
 * A turn's figures: what the agent measures, the worker logs and the bus's
 * turn recorder and usage totals keep (so both layers share this type).
 */

export interface ToolCallMetric {
  name: string;
  ms: number;
  ok: boolean;
}

/** One timed step of a turn (a model call or a tool call), for the dashboard's timeline and the trace. */
export interface TurnStep {
  kind: 'model' | 'tool';
  /** The model (its configured id) or the tool's name: never arguments, results or text. */
  name: string;
  /** When it began, in ms after the turn started. */
  at: number;
  ms: number;
  ok: boolean;
  /** Model calls: prompt tokens (cached included), cached prompt tokens, completion tokens. */
  tokens?: { input: number; cached: number; output: number };
  /** Model calls answered by a fallback model. */
  fallback?: boolean;
}

/** Steps kept per turn (a runaway turn's later steps are counted, not timed). */
export const MAX_TURN_STEPS = 100;

/** Figures for one turn; logged as one line and recorded for the dashboard. */
export interface TurnMetrics {
  sessionKey: string;
  llmCalls: number;
  /** Prompt tokens, cached ones included. */
  promptTokens: number;
  /** Prompt tokens the provider served from its cache (0 when it reported none). */
  cachedTokens?: number;
  /** Prompt tokens written to the provider's cache (0 when it reported none). */
  cacheWriteTokens?: number;
  completionTokens: number;
  toolCalls: ToolCallMetric[];
  wallMs: number;
  outcome: TurnOutcome;
  /** The model (its configured id) that gave the turn's last answer, when the provider says. */
  model?: string;
  /** LLM calls answered by a model other than the chat's first choice (a fallback). */
  fallbacks?: number;
  /** LLM calls by the model that answered them. */
  models?: Record<string, number>;
  /** The turn's model and tool calls with their times (at most {@link MAX_TURN_STEPS}). */
  steps?: TurnStep[];
}

/**
 * How a turn ended. `loop`: stopped for repeating the same tool call;
 * `context_full`: the conversation no longer fits the model's window even after compaction.
 */
export type TurnOutcome =
  | 'ok'
  | 'cancelled'
  | 'error'
  | 'max_iterations'
  | 'command'
  | 'skipped'
  | 'loop'
  | 'context_full'
  /** A model call was refused at a spending limit or the per-minute guard; the chat got one line. */
  | 'budget'
  /** Parked: a tool call waits for a person's approval; the turn resumes when it is answered. */
  | 'waiting';
