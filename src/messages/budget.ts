/**
 * The budget's records, shared by the agent side (src/budget) and its Redis
 * store (src/bus/budget-store.ts): the limits a call is checked against, a
 * reservation, and a day's spend as the usage views read it. Money is kept
 * in whole nano-units (10⁻⁹ of the prices' currency) so Redis adds integers.
 */
import type { TokenCounts } from './token-counts.js';

/** Nano-units per unit of the prices' currency. */
export const NANO = 1_000_000_000;

/** A cost in nano-units, rounded to a whole number. */
export function toNano(cost: number): number {
  return Math.round(cost * NANO);
}

/** Which limit stopped a call or is 80 % used. */
export type BudgetLimitName = 'daily' | 'monthly' | 'chat_daily' | 'daily_tokens' | 'per_minute';

/** The limits in the store's units (money in nano-units); absent: not limited. */
export interface StoreLimits {
  daily?: number;
  monthly?: number;
  chatDaily?: number;
  dailyTokens?: number;
  perMinute: number;
}

/** The periods a call falls in, in MAGPIE_TIMEZONE: `2025-03-31`, `2025-03`, `2025-03-31T23:59`, `23`. */
export interface BudgetPeriod {
  date: string;
  month: string;
  minute: string;
  hour: string;
}

/** What a model call holds against the limits until it is settled or released. */
export interface Reservation {
  session: string;
  date: string;
  month: string;
  costNano: number;
  tokens: number;
}

/** The answer to a reservation: held, or refused by the first limit it would pass. */
export type ReserveResult = { ok: true; reservation: Reservation } | { ok: false; limit: BudgetLimitName };

/** A model call's actual use, to settle its reservation with. */
export interface Settlement {
  /** The configured id of the model that answered. */
  model: string;
  counts: TokenCounts;
  costNano: number;
  /** The hour (`00`–`23`, in MAGPIE_TIMEZONE) the call ended in. */
  hour: string;
}

/** Token and cost figures of a day, a chat or a model (cost in the prices' currency). */
export interface SpendFigures extends TokenCounts {
  calls: number;
  cost: number;
}

/** One day's spend as kept (reservations not included). */
export interface DaySpend {
  date: string;
  total: SpendFigures;
  bySession: Record<string, SpendFigures>;
  byModel: Record<string, SpendFigures>;
  /** Model calls per hour of the day (`00`–`23`). */
  callsByHour: Record<string, number>;
  /** Unattended turns skipped at a limit (heartbeat, cron, helper). */
  skipped: Record<string, number>;
  /** Model calls refused, by the limit that refused them. */
  refused: Record<string, number>;
}

/** What counts against the limits now (reservations in flight included), in the store's units. */
export interface LimitCounters {
  dayCostNano: number;
  monthCostNano: number;
  dayTokens: number;
  chatCostNano: number;
}

/** An empty figures record. */
export function emptySpend(): SpendFigures {
  return { promptTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 0, calls: 0, cost: 0 };
}
