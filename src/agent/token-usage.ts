/**
 * Token counts people can read: totals of prompt (and of it, cached and
 * cache-written) and completion tokens, their estimated cost at the prices
 * the user configured, and the totals a session log holds (each turn's
 * final assistant message carries the turn's counts in its `usage` field).
 */
import type { ChatMessage } from '../providers/types.js';

/** Token counts of one or more LLM calls. `cachedTokens` and `cacheWriteTokens` are part of `promptTokens`. */
export interface TokenCounts {
  promptTokens: number;
  cachedTokens: number;
  cacheWriteTokens: number;
  completionTokens: number;
}

/** Prices per million tokens (MAGPIE_PRICE_INPUT, MAGPIE_PRICE_CACHED_INPUT, MAGPIE_PRICE_OUTPUT). */
export interface TokenPrices {
  input: number;
  /** Cached prompt tokens. */
  cachedInput: number;
  output: number;
}

/** All zero. */
export function zeroCounts(): TokenCounts {
  return { promptTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 0 };
}

/** `a + b`, field by field (missing fields count as 0). */
export function addCounts(a: TokenCounts, b: Partial<TokenCounts>): TokenCounts {
  return {
    promptTokens: a.promptTokens + (b.promptTokens ?? 0),
    cachedTokens: a.cachedTokens + (b.cachedTokens ?? 0),
    cacheWriteTokens: a.cacheWriteTokens + (b.cacheWriteTokens ?? 0),
    completionTokens: a.completionTokens + (b.completionTokens ?? 0),
  };
}

/**
 * The estimated cost: uncached prompt tokens (cache writes included) at the
 * input price, cached ones at the cached price, completion at the output
 * price. In the prices' currency.
 */
export function estimateCost(counts: TokenCounts, prices: TokenPrices): number {
  const cached = Math.min(counts.cachedTokens, counts.promptTokens);
  return (
    ((counts.promptTokens - cached) * prices.input +
      cached * prices.cachedInput +
      counts.completionTokens * prices.output) /
    1_000_000
  );
}

/** A cost for people: four significant decimals below 1, two above (`0.0123`, `4.57`). */
export function formatCost(cost: number): string {
  if (cost === 0) return '0';
  return cost >= 1 ? cost.toFixed(2) : cost.toPrecision(3).replace(/0+$/, '');
}

/** `12,345 in (8,000 cached), 678 out` — plus `, cost ≈ 0.0123` with prices. */
export function describeCounts(counts: TokenCounts, prices?: TokenPrices): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const parts = [
    `${n(counts.promptTokens)} in (${n(counts.cachedTokens)} cached)`,
    `${n(counts.completionTokens)} out`,
  ];
  if (prices) parts.push(`cost ≈ ${formatCost(estimateCost(counts, prices))}`);
  return parts.join(', ');
}

/** The turn counts an entry of a session log carries, if any. */
export function usageOf(entry: ChatMessage): TokenCounts | undefined {
  if (entry.role !== 'assistant') return undefined;
  const usage = (entry as { usage?: unknown }).usage;
  if (!usage || typeof usage !== 'object') return undefined;
  const u = usage as Record<string, unknown>;
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0);
  return {
    promptTokens: num(u.promptTokens),
    cachedTokens: num(u.cachedTokens),
    cacheWriteTokens: num(u.cacheWriteTokens),
    completionTokens: num(u.completionTokens),
  };
}

/** The sum of the turn counts in a session log; undefined when no entry carries any. */
export function usageOfEntries(entries: readonly ChatMessage[]): TokenCounts | undefined {
  let total: TokenCounts | undefined;
  for (const entry of entries) {
    const usage = usageOf(entry);
    if (usage) total = addCounts(total ?? zeroCounts(), usage);
  }
  return total;
}
