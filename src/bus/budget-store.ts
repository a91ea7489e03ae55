/**
 * The budget's Redis side (the BudgetStore port of src/budget/ports.ts): each
 * model call reserves its estimated cost against every limit in one Lua
 * script, and settles to its actual use (or releases) in another (both called by SHA; several
 * figures of one hash are added with one HMGET and one HSET), so workers
 * on any number of machines share one limit. Keys:
 *
 * - `<prefix>:budget:day:<date>`: `cost` and `tokens` of the day, `c:<session>`
 *   a chat's cost (reservations in flight included), `n:<limit>` the 80 %
 *   notices given; `<prefix>:budget:month:<month>`: `cost`, `n:monthly`.
 * - `<prefix>:budget:rate:<session>:<minute>`: the chat's calls that minute.
 * - `<prefix>:spend:day:<date>`: what was settled, by `<scope>|<kind>`: scope
 *   `*`, `s:<session>`, `m:<model>` with kinds prompt, cached, cache_write,
 *   completion, cost (nano-units), calls; `h:<hour>|calls`; `skipped|<kind>`;
 *   `refused|<limit>`.
 *
 * Days are kept {@link SPEND_DAYS_KEPT} days, months a year.
 */
import type { Redis } from 'ioredis';
import {
  type BudgetLimitName,
  type BudgetPeriod,
  type DaySpend,
  emptySpend,
  type LimitCounters,
  NANO,
  type Reservation,
  type ReserveResult,
  type Settlement,
  type SpendFigures,
  type StoreLimits,
} from '../messages/budget.js';
import { opsKeys } from './keys.js';
import { HASH_ADD, type LuaScript, runScript } from './lua.js';

/** Days a day's counters and spend are kept. */
export const SPEND_DAYS_KEPT = 62;
const DAY_TTL_S = SPEND_DAYS_KEPT * 86_400;
const MONTH_TTL_S = 400 * 86_400;

/**
 * KEYS: day, month, rate, spend. ARGV: session, costNano, tokens, daily, monthly, chatDaily,
 * dailyTokens, perMinute (-1: no limit), dayTtl, monthTtl.
 * → {'ok'} | {'refused', limit}. Every limit is checked before anything is counted.
 */
const RESERVE: LuaScript = {
  name: 'budgetReserve',
  keys: 4,
  lua: `
local chat = 'c:' .. ARGV[1]
local cost, tokens = tonumber(ARGV[2]), tonumber(ARGV[3])
local daily, monthly, chatDaily, dailyTokens, perMinute =
  tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local function refuse(limit)
  redis.call('HINCRBY', KEYS[4], 'refused|' .. limit, 1)
  redis.call('EXPIRE', KEYS[4], ARGV[9])
  return {'refused', limit}
end
local day = redis.call('HMGET', KEYS[1], 'cost', 'tokens', chat)
local dayCost, dayTokens, chatCost = tonumber(day[1] or '0'), tonumber(day[2] or '0'), tonumber(day[3] or '0')
local monthCost = tonumber(redis.call('HGET', KEYS[2], 'cost') or '0')
if monthly >= 0 and monthCost + cost > monthly then return refuse('monthly') end
if daily >= 0 and dayCost + cost > daily then return refuse('daily') end
if chatDaily >= 0 and chatCost + cost > chatDaily then return refuse('chat_daily') end
if dailyTokens >= 0 and dayTokens + tokens > dailyTokens then return refuse('daily_tokens') end
local calls = tonumber(redis.call('GET', KEYS[3]) or '0')
if calls >= perMinute then return refuse('per_minute') end
redis.call('SET', KEYS[3], calls + 1, 'EX', 120)
local function int(n) return string.format('%d', n) end
redis.call('HSET', KEYS[1], 'cost', int(dayCost + cost), 'tokens', int(dayTokens + tokens), chat, int(chatCost + cost))
redis.call('EXPIRE', KEYS[1], ARGV[9])
redis.call('HSET', KEYS[2], 'cost', int(monthCost + cost))
redis.call('EXPIRE', KEYS[2], ARGV[10])
return {'ok'}`,
};

/**
 * KEYS: day, month, spend. ARGV: session, reserved cost, reserved tokens, actual cost, actual
 * tokens, daily, monthly, chatDaily, dailyTokens (-1: none), dayTtl, then (when settled, not
 * released) model, hour, prompt, cached, cacheWrite, completion.
 * → the limits newly past 80 % (each told once per period).
 */
const SETTLE: LuaScript = {
  name: 'budgetSettle',
  keys: 3,
  lua: `${HASH_ADD}
local chat = 'c:' .. ARGV[1]
local dCost = tonumber(ARGV[4]) - tonumber(ARGV[2])
local dTokens = tonumber(ARGV[5]) - tonumber(ARGV[3])
local day = hashAdd(KEYS[1], {'cost', 'tokens', chat}, {dCost, dTokens, dCost})
local dayCost, dayTokens, chatCost = day['cost'], day['tokens'], day[chat]
local monthCost = redis.call('HINCRBY', KEYS[2], 'cost', dCost)
local crossed = {}
local function check(value, limit, key, flag, name)
  if limit > 0 and value * 5 >= limit * 4 and redis.call('HSETNX', key, flag, 1) == 1 then
    crossed[#crossed + 1] = name
  end
end
check(dayCost, tonumber(ARGV[6]), KEYS[1], 'n:daily', 'daily')
check(monthCost, tonumber(ARGV[7]), KEYS[2], 'n:monthly', 'monthly')
check(chatCost, tonumber(ARGV[8]), KEYS[1], 'n:' .. chat, 'chat_daily')
check(dayTokens, tonumber(ARGV[9]), KEYS[1], 'n:daily_tokens', 'daily_tokens')
if ARGV[11] then
  local kinds = {'cost', 'prompt', 'cached', 'cache_write', 'completion'}
  local values = {tonumber(ARGV[4]), tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[16])}
  local fields, bys = {}, {}
  local function add(field, by)
    fields[#fields + 1] = field
    bys[#bys + 1] = by
  end
  for _, scope in ipairs({'*', 's:' .. ARGV[1], 'm:' .. ARGV[11]}) do
    for i, kind in ipairs(kinds) do
      if values[i] ~= 0 then add(scope .. '|' .. kind, values[i]) end
    end
    add(scope .. '|calls', 1)
  end
  add('h:' .. ARGV[12] .. '|calls', 1)
  hashAdd(KEYS[3], fields, bys)
  redis.call('EXPIRE', KEYS[3], ARGV[10])
end
return crossed`,
};

/** -1 for "no limit", as the scripts read it. */
function arg(limit: number | undefined): number {
  return limit === undefined ? -1 : limit;
}

/** Limits, reservations and spend in Redis (see the file's header). */
export class RedisBudgetStore {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  /** Holds `costNano` and `tokens` for one call of `session` if no limit would be passed. */
  async reserve(
    session: string,
    period: BudgetPeriod,
    estimate: { costNano: number; tokens: number },
    limits: StoreLimits,
  ): Promise<ReserveResult> {
    const p = this.#prefix;
    const reply = (await runScript(
      this.#redis,
      RESERVE,
      opsKeys.budgetDay(p, period.date),
      opsKeys.budgetMonth(p, period.month),
      opsKeys.budgetRate(p, session, period.minute),
      opsKeys.spendDay(p, period.date),
      session,
      estimate.costNano,
      estimate.tokens,
      arg(limits.daily),
      arg(limits.monthly),
      arg(limits.chatDaily),
      arg(limits.dailyTokens),
      limits.perMinute,
      DAY_TTL_S,
      MONTH_TTL_S,
    )) as string[];
    if (reply[0] === 'ok') {
      return {
        ok: true,
        reservation: { session, date: period.date, month: period.month, ...estimate },
      };
    }
    return { ok: false, limit: reply[1] as BudgetLimitName };
  }

  /** Replaces the reservation by the call's actual use; returns the limits newly past 80 %. */
  settle(reservation: Reservation, actual: Settlement, limits: StoreLimits): Promise<BudgetLimitName[]> {
    const { counts } = actual;
    return this.#settle(reservation, actual.costNano, counts.promptTokens + counts.completionTokens, limits, [
      actual.model,
      actual.hour,
      counts.promptTokens,
      counts.cachedTokens,
      counts.cacheWriteTokens,
      counts.completionTokens,
    ]);
  }

  /** Gives a reservation back (the call failed before any use was reported). */
  async release(reservation: Reservation, limits: StoreLimits): Promise<void> {
    await this.#settle(reservation, 0, 0, limits, []);
  }

  async #settle(
    r: Reservation,
    costNano: number,
    tokens: number,
    limits: StoreLimits,
    spend: Array<string | number>,
  ): Promise<BudgetLimitName[]> {
    const p = this.#prefix;
    return (await runScript(
      this.#redis,
      SETTLE,
      opsKeys.budgetDay(p, r.date),
      opsKeys.budgetMonth(p, r.month),
      opsKeys.spendDay(p, r.date),
      r.session,
      r.costNano,
      r.tokens,
      costNano,
      tokens,
      arg(limits.daily),
      arg(limits.monthly),
      arg(limits.chatDaily),
      arg(limits.dailyTokens),
      DAY_TTL_S,
      ...spend,
    )) as BudgetLimitName[];
  }

  /** What counts against the limits now, for `session` in `period`. */
  async counters(session: string, period: Pick<BudgetPeriod, 'date' | 'month'>): Promise<LimitCounters> {
    const p = this.#prefix;
    const [day, month] = await Promise.all([
      this.#redis.hmget(opsKeys.budgetDay(p, period.date), 'cost', 'tokens', `c:${session}`),
      this.#redis.hget(opsKeys.budgetMonth(p, period.month), 'cost'),
    ]);
    const n = (v: string | null | undefined) => Number(v ?? 0) || 0;
    return {
      dayCostNano: n(day[0]),
      dayTokens: n(day[1]),
      chatCostNano: n(day[2]),
      monthCostNano: n(month),
    };
  }

  /** Counts an unattended turn (`heartbeat`, `cron`, `helper`) skipped at a limit. */
  async skipped(kind: string, date: string): Promise<void> {
    const key = opsKeys.spendDay(this.#prefix, date);
    await this.#redis.multi().hincrby(key, `skipped|${kind}`, 1).expire(key, DAY_TTL_S).exec();
  }

  /** The settled spend of each of `dates` (days with nothing: zero figures). */
  async days(dates: readonly string[]): Promise<DaySpend[]> {
    if (dates.length === 0) return [];
    const tx = this.#redis.multi();
    for (const date of dates) tx.hgetall(opsKeys.spendDay(this.#prefix, date));
    const replies = (await tx.exec()) ?? [];
    return dates.map((date, i) => parseDay(date, (replies[i]?.[1] as Record<string, string>) ?? {}));
  }
}

const KINDS: Record<string, keyof SpendFigures> = {
  prompt: 'promptTokens',
  cached: 'cachedTokens',
  cache_write: 'cacheWriteTokens',
  completion: 'completionTokens',
  calls: 'calls',
  cost: 'cost',
};

/** A spend hash → the day's figures. */
function parseDay(date: string, hash: Record<string, string>): DaySpend {
  const day: DaySpend = {
    date,
    total: emptySpend(),
    bySession: {},
    byModel: {},
    callsByHour: {},
    skipped: {},
    refused: {},
  };
  for (const [field, raw] of Object.entries(hash)) {
    const bar = field.lastIndexOf('|');
    const scope = field.slice(0, bar);
    const kind = field.slice(bar + 1);
    const value = Number(raw);
    if (bar <= 0 || !Number.isFinite(value)) continue;
    if (scope === 'skipped') day.skipped[kind] = value;
    else if (scope === 'refused') day.refused[kind] = value;
    else if (scope.startsWith('h:')) day.callsByHour[scope.slice(2)] = value;
    else {
      const figures = figuresFor(day, scope);
      const name = KINDS[kind];
      if (figures && name) figures[name] += name === 'cost' ? value / NANO : value;
    }
  }
  return day;
}

function figuresFor(day: DaySpend, scope: string): SpendFigures | undefined {
  if (scope === '*') return day.total;
  const table = scope.startsWith('s:') ? day.bySession : scope.startsWith('m:') ? day.byModel : undefined;
  if (!table) return undefined;
  const name = scope.slice(2);
  table[name] ??= emptySpend();
  return table[name];
}
