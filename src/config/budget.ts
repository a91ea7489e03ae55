/**
 * The environment variables of spending limits and per-model prices:
 * MAGPIE_BUDGET_DAILY, MAGPIE_BUDGET_MONTHLY, MAGPIE_BUDGET_CHAT_DAILY (in the
 * prices' currency), MAGPIE_BUDGET_DAILY_TOKENS, MAGPIE_MAX_CALLS_PER_MINUTE and
 * MAGPIE_PRICES (`model=input/cached/output, …`, per million tokens).
 */
import { z } from 'zod';
import type { TokenPrices } from '../messages/token-counts.js';
import type { PriceConfig } from './usage.js';

/** A money limit: a number > 0, or unset. */
export const moneyLimitSchema = z
  .string()
  .optional()
  .transform((v, ctx) => {
    if (v === undefined || v.trim() === '') return undefined;
    const n = Number(v.trim());
    if (!Number.isFinite(n) || n <= 0) {
      ctx.addIssue({
        code: 'custom',
        message: `"${v}" is not a limit (a number > 0, in the prices' currency)`,
      });
      return z.NEVER;
    }
    return n;
  });

/** A token limit: a whole number > 0, or unset. */
export const tokenLimitSchema = z
  .string()
  .optional()
  .transform((v, ctx) => {
    if (v === undefined || v.trim() === '') return undefined;
    const n = Number(v.trim());
    if (!Number.isInteger(n) || n < 1) {
      ctx.addIssue({ code: 'custom', message: `"${v}" is not a token limit (a whole number > 0)` });
      return z.NEVER;
    }
    return n;
  });

/**
 * MAGPIE_PRICES: `model=input/cached/output` entries separated by commas, each
 * price a number ≥ 0 per million tokens. A malformed entry is refused whole.
 *
 * @example "gpt-4o-mini=0.15/0.075/0.60, llama3.1=0/0/0"
 */
export const modelPricesSchema = z
  .string()
  .optional()
  .transform((v, ctx) => {
    const table: Record<string, TokenPrices> = {};
    for (const raw of (v ?? '').split(',')) {
      const entry = raw.trim();
      if (entry === '') continue;
      const parsed = parsePriceEntry(entry);
      if (typeof parsed === 'string') {
        ctx.addIssue({ code: 'custom', message: `entry "${entry}" ${parsed}` });
        return z.NEVER;
      }
      table[parsed.model] = parsed.prices;
    }
    return table;
  });

function parsePriceEntry(entry: string): { model: string; prices: TokenPrices } | string {
  const eq = entry.lastIndexOf('=');
  const model = entry.slice(0, eq).trim();
  const parts = entry.slice(eq + 1).split('/');
  if (eq <= 0 || model === '' || parts.length !== 3)
    return 'is not model=input/cached/output (per million tokens, e.g. gpt-4o-mini=0.15/0.075/0.60)';
  const [input, cached, output] = parts.map((p) => (p.trim() === '' ? Number.NaN : Number(p.trim())));
  if (![input, cached, output].every((n) => n !== undefined && Number.isFinite(n) && n >= 0))
    return 'has a price that is not a number ≥ 0';
  return { model, prices: { input: input!, cachedInput: cached!, output: output! } };
}

/** The limits and prices the budget enforces (config.budget). */
export interface BudgetConfig {
  /** All chats together, per day in MAGPIE_TIMEZONE. */
  daily: number | undefined;
  /** All chats together, per calendar month. */
  monthly: number | undefined;
  /** Any one chat, per day. */
  chatDaily: number | undefined;
  /** Tokens (prompt + completion) per day, all chats together. */
  dailyTokens: number | undefined;
  /** Model calls per chat per minute. */
  maxCallsPerMinute: number;
  /** Per-model prices (MAGPIE_PRICES), by the model's configured id or name. */
  prices: Readonly<Record<string, TokenPrices>>;
  /** MAGPIE_PRICE_*: the price of any model MAGPIE_PRICES does not name. */
  fallbackPrices: PriceConfig | undefined;
}

/** Whether any money limit is set. */
export function hasMoneyLimit(budget: BudgetConfig): boolean {
  return budget.daily !== undefined || budget.monthly !== undefined || budget.chatDaily !== undefined;
}

/** Whether any limit at all is set. */
export function hasAnyLimit(budget: BudgetConfig): boolean {
  return hasMoneyLimit(budget) || budget.dailyTokens !== undefined;
}

/**
 * The prices of `model` (its configured id or its name at the endpoint): its
 * MAGPIE_PRICES entry, else MAGPIE_PRICE_*, else undefined (tokens only).
 */
export function priceOf(
  budget: Pick<BudgetConfig, 'prices' | 'fallbackPrices'>,
  ...names: Array<string | undefined>
): TokenPrices | undefined {
  for (const name of names) {
    if (name !== undefined && Object.hasOwn(budget.prices, name)) return budget.prices[name];
  }
  return budget.fallbackPrices;
}
