/**
 * The token budget of one turn: how full the context window is
 * before each LLM call — the API's reported usage when there is one, else an
 * estimate (~4 characters a token plus ~4 tokens a message) — and what to do:
 * warn at 80%, compact towards 80% above 95%.
 */
import type { ChatMessage } from '../providers/types.js';
import { estimateTokens } from './summarize.js';

/** Fraction of the window at which a warning is logged. */
export const WARN_FRACTION = 0.8;
/** Fraction above which the history is compacted before the call. */
export const HARD_FRACTION = 0.95;
/** Fraction compaction aims for. */
export const TARGET_FRACTION = 0.8;

export type BudgetLevel = 'ok' | 'warn' | 'over';

/** What the budget says about a request of `tokens` tokens. */
export function budgetLevel(tokens: number, limit: number): BudgetLevel {
  if (tokens > limit * HARD_FRACTION) return 'over';
  if (tokens >= limit * WARN_FRACTION) return 'warn';
  return 'ok';
}

/** Usage the API reported for the last call of this turn, and how many messages that call sent. */
export interface LastCall {
  promptTokens: number;
  completionTokens: number;
  /** Messages in that request. */
  sentMessages: number;
}

/**
 * Tokens of the next request: the last call's reported prompt and completion
 * tokens plus an estimate of the messages added since, or a plain estimate
 * when the API reported nothing (or the history was rebuilt since).
 */
export function requestTokens(messages: readonly ChatMessage[], last?: LastCall): number {
  if (!last || last.sentMessages > messages.length) return estimateTokens(messages);
  const added = messages.slice(last.sentMessages + 1); // +1: the assistant reply the completion counted
  return last.promptTokens + last.completionTokens + estimateTokens(added);
}

/**
 * How many trailing messages of `history` fit in `budget` tokens (at least 1
 * when there is any): the `keepLast` to compact with, aiming at the target.
 */
export function keepWithin(history: readonly ChatMessage[], budget: number): number {
  let used = 0;
  let kept = 0;
  for (let i = history.length - 1; i >= 0; i -= 1) {
    used += estimateTokens([history[i]!]);
    if (used > budget) break;
    kept += 1;
  }
  return Math.max(1, kept);
}
