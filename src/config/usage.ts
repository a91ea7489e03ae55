/**
 * The environment variables of prompt caching and token prices:
 * MAGPIE_PROMPT_CACHE (auto | off) and MAGPIE_PRICE_INPUT,
 * MAGPIE_PRICE_CACHED_INPUT, MAGPIE_PRICE_OUTPUT (per million tokens).
 */
import { z } from 'zod';
import { ConfigError } from '../errors/index.js';

/** MAGPIE_PROMPT_CACHE: `auto` (hints where the endpoint takes them) or `off`. */
export const promptCacheSchema = z
  .string()
  .optional()
  .transform((v, ctx) => {
    const text = (v ?? '').trim().toLowerCase();
    if (text === '' || text === 'auto') return 'auto' as const;
    if (text === 'off') return 'off' as const;
    ctx.addIssue({ code: 'custom', message: `"${v}" must be auto or off` });
    return z.NEVER;
  });

/** One MAGPIE_PRICE_* variable: a number ≥ 0, or unset. */
export const priceSchema = z
  .string()
  .optional()
  .transform((v, ctx) => {
    if (v === undefined || v.trim() === '') return undefined;
    const n = Number(v.trim());
    if (!Number.isFinite(n) || n < 0) {
      ctx.addIssue({ code: 'custom', message: `"${v}" is not a price (a number ≥ 0, per million tokens)` });
      return z.NEVER;
    }
    return n;
  });

/** Prices per million tokens. */
export interface PriceConfig {
  input: number;
  /** Cached prompt tokens (MAGPIE_PRICE_CACHED_INPUT; the input price when unset). */
  cachedInput: number;
  output: number;
}

/**
 * The prices, or undefined when none is set. Input and output prices go
 * together (a cost with one of them missing would mislead).
 *
 * @throws ConfigError naming the missing variable.
 */
export function pricesFrom(e: {
  MAGPIE_PRICE_INPUT: number | undefined;
  MAGPIE_PRICE_CACHED_INPUT: number | undefined;
  MAGPIE_PRICE_OUTPUT: number | undefined;
}): PriceConfig | undefined {
  const { MAGPIE_PRICE_INPUT: input, MAGPIE_PRICE_CACHED_INPUT: cached, MAGPIE_PRICE_OUTPUT: output } = e;
  if (input === undefined && cached === undefined && output === undefined) return undefined;
  const missing =
    input === undefined ? 'MAGPIE_PRICE_INPUT' : output === undefined ? 'MAGPIE_PRICE_OUTPUT' : '';
  if (input === undefined || output === undefined) {
    throw new ConfigError(
      `${missing} is not set: a cost estimate needs both MAGPIE_PRICE_INPUT and MAGPIE_PRICE_OUTPUT ` +
        '(per million tokens; see .env.example), or no price at all',
    );
  }
  return { input, cachedInput: cached ?? input, output };
}
