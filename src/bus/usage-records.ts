/**
 * Token use over time, in Redis: per day (in the configured time zone) and
 * per session, kept by the workers as each turn ends and read by `magpie
 * status`, the dashboard and `/metrics`. A day's hash expires after 40 days;
 * the per-session totals stay (one small hash field set per chat).
 */

import type { Redis } from 'ioredis';
import {
  addCounts,
  estimateCost,
  type TokenCounts,
  type TokenPrices,
  zeroCounts,
} from '../messages/token-counts.js';
import { wallTimeIn } from '../time/zone.js';
import { opsKeys, totalsFields } from './keys.js';
import type { TurnRecord } from './turn-records.js';

/** The running totals since the first turn (`<prefix>:turn-totals`, see totalsFields), as stored. */
export function readTotals(redis: Redis, prefix: string): Promise<Record<string, string>> {
  return redis.hgetall(opsKeys.totals(prefix));
}

/** Days a day's usage hash is kept. */
export const USAGE_DAYS_KEPT = 40;

/** Token figures of a day, a session or all time. */
export interface UsageFigures extends TokenCounts {
  turns: number;
  /** Estimated cost at MAGPIE_PRICE_* (absent without prices). */
  cost?: number;
}

/** What `magpie status --json` shows under `usage`. */
export interface UsageReport {
  /** Today's date (YYYY-MM-DD) in `timezone`. */
  date: string;
  timezone: string;
  today: UsageFigures;
  /** Since the first recorded turn. */
  total: UsageFigures;
  /** Sessions with turns today, most prompt tokens first (at most `sessions`), with their totals. */
  sessions: Array<{ session: string; today: UsageFigures; total: UsageFigures }>;
  /** The prices costs were estimated at (absent when MAGPIE_PRICE_* are unset). */
  prices?: TokenPrices;
}

/** Hash field kinds, per session (`<session>|<kind>`) and for the whole day (`*|<kind>`). */
const KINDS = {
  promptTokens: 'prompt',
  cachedTokens: 'cached',
  cacheWriteTokens: 'cache_write',
  completionTokens: 'completion',
  turns: 'turns',
} as const;
const ALL = '*';

/** `YYYY-MM-DD` of `at` in `timezone`. @throws RangeError for an unknown time zone */
export function dayOf(at: Date, timezone: string): string {
  const { year, month, day } = wallTimeIn(at.getTime(), timezone);
  return `${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

/** What a finished turn adds to the day's usage hash and to the per-session totals hash. */
export interface UsageIncrements {
  day: Array<[string, number]>;
  sessions: Array<[string, number]>;
}

/** The increments a finished turn adds to the day's and the session's usage (zeros left out). */
export function usageOf(record: TurnRecord): UsageIncrements {
  const out: UsageIncrements = { day: [], sessions: [] };
  const counts: Record<keyof typeof KINDS, number> = {
    promptTokens: record.promptTokens,
    cachedTokens: record.cachedTokens,
    cacheWriteTokens: record.cacheWriteTokens,
    completionTokens: record.completionTokens,
    turns: 1,
  };
  for (const [field, kind] of Object.entries(KINDS) as Array<[keyof typeof KINDS, string]>) {
    const by = counts[field];
    if (by === 0) continue;
    out.day.push([`${ALL}|${kind}`, by], [`${record.session}|${kind}`, by]);
    out.sessions.push([`${record.session}|${kind}`, by]);
  }
  return out;
}

export interface ReadUsageOptions {
  timezone: string;
  prices?: TokenPrices;
  /** Sessions listed. @defaultValue 20 */
  sessions?: number;
  /** @defaultValue now */
  now?: Date;
}

/** Today's, all-time and per-session usage. All-time comes from the totals hash `/metrics` reads. */
export async function readUsage(
  redis: Redis,
  prefix: string,
  options: ReadUsageOptions,
): Promise<UsageReport> {
  const date = dayOf(options.now ?? new Date(), options.timezone);
  const [day, sessions, totals] = await Promise.all([
    redis.hgetall(opsKeys.usageDay(prefix, date)),
    redis.hgetall(opsKeys.usageSessions(prefix)),
    redis.hgetall(opsKeys.totals(prefix)),
  ]);
  const byDay = bySession(day);
  const bySessionTotal = bySession(sessions);
  const priced = (f: UsageFigures) => withCost(f, options.prices);
  const today = priced(byDay.get(ALL) ?? emptyFigures());
  byDay.delete(ALL);
  const total = priced(totalsFigures(totals));
  const list = [...byDay.entries()]
    .sort(([a, x], [b, y]) => y.promptTokens - x.promptTokens || a.localeCompare(b))
    .slice(0, options.sessions ?? 20)
    .map(([session, figures]) => ({
      session,
      today: priced(figures),
      total: priced(bySessionTotal.get(session) ?? figures),
    }));
  return {
    date,
    timezone: options.timezone,
    today,
    total,
    sessions: list,
    ...(options.prices ? { prices: options.prices } : {}),
  };
}

function emptyFigures(): UsageFigures {
  return { ...zeroCounts(), turns: 0 };
}

function withCost(figures: UsageFigures, prices: TokenPrices | undefined): UsageFigures {
  return prices ? { ...figures, cost: round(estimateCost(figures, prices)) } : figures;
}

function round(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}

/** `<session>|<kind>` fields → figures per session. */
function bySession(hash: Record<string, string>): Map<string, UsageFigures> {
  const out = new Map<string, UsageFigures>();
  const fields = Object.entries(KINDS) as Array<[keyof typeof KINDS, string]>;
  for (const [name, raw] of Object.entries(hash)) {
    const bar = name.lastIndexOf('|');
    if (bar <= 0) continue;
    const field = fields.find(([, kind]) => kind === name.slice(bar + 1))?.[0];
    const value = Number(raw);
    if (!field || !Number.isFinite(value)) continue;
    const session = name.slice(0, bar);
    const figures = out.get(session) ?? emptyFigures();
    figures[field] += value;
    out.set(session, figures);
  }
  return out;
}

function totalsFigures(totals: Record<string, string>): UsageFigures {
  const n = (field: string) => Number(totals[field] ?? 0) || 0;
  return {
    ...addCounts(zeroCounts(), {
      promptTokens: n(totalsFields.promptTokens),
      cachedTokens: n(totalsFields.cachedTokens),
      cacheWriteTokens: n(totalsFields.cacheWriteTokens),
      completionTokens: n(totalsFields.completionTokens),
    }),
    turns: n(totalsFields.latencyCount),
  };
}
