/**
 * Token counts people can read: totals of prompt (and of it, cached and
 * cache-written) and completion tokens, and their estimated cost at the
 * prices the user configured. Shared by the agent, the bus's usage records
 * and the status views; the totals a session log holds are in
 * agent/token-usage.ts.
 */

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
