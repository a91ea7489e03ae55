/**
 * The spending limits as the workers apply them: the periods a call falls in
 * (days and months in MAGPIE_TIMEZONE, from an injectable clock), the limits
 * in the store's units, the lines a chat reads at a limit and the owner's
 * 80 % notice. The store does the counting (one script per reservation and
 * per settlement); this class decides what to ask it and what to say.
 */
import type { BudgetConfig } from '../config/budget.js';
import { hasAnyLimit } from '../config/budget.js';
import type { Logger } from '../log/index.js';
import {
  type BudgetLimitName,
  type BudgetPeriod,
  NANO,
  type StoreLimits,
  toNano,
} from '../messages/budget.js';
import { formatCost } from '../messages/token-counts.js';
import { wallTimeIn } from '../time/zone.js';
import type { BudgetStore, UnattendedBudget } from './ports.js';

export interface BudgetOptions {
  config: BudgetConfig;
  store: BudgetStore;
  timezone: string;
  logger: Logger;
  /** Tells the owner (their last active chat) a limit is 80 % used; `id` is the same for one limit and period. */
  notify?: (text: string, id: string) => Promise<void>;
  /** @defaultValue Date.now */
  now?: () => number;
}

/** The limits of one deployment, over a shared store. */
export class Budget implements UnattendedBudget {
  readonly config: BudgetConfig;
  readonly store: BudgetStore;
  readonly timezone: string;
  readonly limits: StoreLimits;
  readonly #o: BudgetOptions;
  readonly #now: () => number;

  constructor(options: BudgetOptions) {
    this.#o = options;
    this.config = options.config;
    this.store = options.store;
    this.timezone = options.timezone;
    this.#now = options.now ?? Date.now;
    const { daily, monthly, chatDaily, dailyTokens, maxCallsPerMinute } = options.config;
    this.limits = {
      ...(daily !== undefined ? { daily: toNano(daily) } : {}),
      ...(monthly !== undefined ? { monthly: toNano(monthly) } : {}),
      ...(chatDaily !== undefined ? { chatDaily: toNano(chatDaily) } : {}),
      ...(dailyTokens !== undefined ? { dailyTokens } : {}),
      perMinute: maxCallsPerMinute,
    };
  }

  /** Now, on the budget's clock. */
  now(): number {
    return this.#now();
  }

  /** The day, month, minute and hour of now in the configured zone. */
  period(at = this.#now()): BudgetPeriod {
    return periodOf(at, this.timezone);
  }

  /** The line a chat reads when `limit` refused its call. */
  limitLine(limit: BudgetLimitName): string {
    const { config, timezone } = this;
    const money = (n: number | undefined) => (n ?? 0).toFixed(2);
    const afterMidnight = `magpie will answer again after midnight (${timezone}).`;
    switch (limit) {
      case 'daily':
        return `Today's budget of ${money(config.daily)} is spent; ${afterMidnight}`;
      case 'monthly':
        return `This month's budget of ${money(config.monthly)} is spent; magpie will answer again on the 1st (${timezone}).`;
      case 'chat_daily':
        return `This chat's budget of ${money(config.chatDaily)} for today is spent; ${afterMidnight}`;
      case 'daily_tokens':
        return `Today's limit of ${(config.dailyTokens ?? 0).toLocaleString('en-US')} tokens is spent; ${afterMidnight}`;
      case 'per_minute':
        return (
          `Stopped: this chat reached ${config.maxCallsPerMinute} model calls in a minute ` +
          '(MAGPIE_MAX_CALLS_PER_MINUTE). Send a message to go on.'
        );
    }
  }

  /** Tells the owner, once per limit and period (the store decides "once"), that 80 % is used. */
  async noticeCrossed(crossed: readonly BudgetLimitName[], session: string): Promise<void> {
    if (crossed.length === 0) return;
    const period = this.period();
    const counters = await this.store.counters(session, period);
    for (const limit of crossed) {
      const text = this.#noticeText(limit, counters, session);
      const scope = limit === 'monthly' ? period.month : period.date;
      const id = `budget-80-${limit}-${scope}${limit === 'chat_daily' ? `-${session}` : ''}`;
      this.#o.logger.warn({ limit, session }, 'a spending limit is 80% used; telling the owner');
      await this.#o.notify?.(text, id).catch((err: unknown) => {
        this.#o.logger.warn({ err, limit }, 'the 80% budget notice could not be sent');
      });
    }
  }

  #noticeText(
    limit: BudgetLimitName,
    c: Awaited<ReturnType<BudgetStore['counters']>>,
    session: string,
  ): string {
    const { config } = this;
    const of = (spent: number, max: number | undefined) =>
      `${formatCost(spent / NANO)} of ${(max ?? 0).toFixed(2)}`;
    switch (limit) {
      case 'monthly':
        return `magpie has used 80% of this month's budget (${of(c.monthCostNano, config.monthly)}).`;
      case 'chat_daily':
        return `The chat ${session} has used 80% of its budget for today (${of(c.chatCostNano, config.chatDaily)}).`;
      case 'daily_tokens':
        return `magpie has used 80% of today's token limit (${c.dayTokens.toLocaleString('en-US')} of ${(config.dailyTokens ?? 0).toLocaleString('en-US')}).`;
      default:
        return `magpie has used 80% of today's budget (${of(c.dayCostNano, config.daily)}).`;
    }
  }

  /**
   * The line `session` would read if it called the model now (a limit already
   * reached), or undefined. Unattended runs ask this before they start.
   */
  async blocked(session: string): Promise<string | undefined> {
    if (!hasAnyLimit(this.config)) return undefined;
    const c = await this.store.counters(session, this.period());
    const { limits } = this;
    const reached = (value: number, limit: number | undefined) => limit !== undefined && value >= limit;
    if (reached(c.monthCostNano, limits.monthly)) return this.limitLine('monthly');
    if (reached(c.dayCostNano, limits.daily)) return this.limitLine('daily');
    if (reached(c.chatCostNano, limits.chatDaily)) return this.limitLine('chat_daily');
    if (reached(c.dayTokens, limits.dailyTokens)) return this.limitLine('daily_tokens');
    return undefined;
  }

  /** What counts against the limits now (money in the prices' currency), for `/metrics` and status. */
  async spentNow(): Promise<Record<string, number>> {
    const c = await this.store.counters('*', this.period());
    return { daily: c.dayCostNano / NANO, monthly: c.monthCostNano / NANO, daily_tokens: c.dayTokens };
  }

  /** The limits set, by name (money in the prices' currency). */
  limitValues(): Record<string, number> {
    const { daily, monthly, chatDaily, dailyTokens, maxCallsPerMinute } = this.config;
    const set = {
      daily,
      monthly,
      chat_daily: chatDaily,
      daily_tokens: dailyTokens,
      per_minute: maxCallsPerMinute,
    };
    return Object.fromEntries(Object.entries(set).filter(([, v]) => v !== undefined)) as Record<
      string,
      number
    >;
  }

  /** Counts a skipped unattended turn in today's spend record. */
  async skipped(kind: string): Promise<void> {
    await this.store.skipped(kind, this.period().date);
  }
}

/** The day, month, minute and hour of `at` in `timezone`. */
export function periodOf(at: number, timezone: string): BudgetPeriod {
  const w = wallTimeIn(at, timezone);
  const two = (n: number) => String(n).padStart(2, '0');
  const month = `${w.year}-${two(w.month)}`;
  const date = `${month}-${two(w.day)}`;
  return { date, month, minute: `${date}T${two(w.hour)}:${two(w.minute)}`, hour: two(w.hour) };
}

/** The dates (YYYY-MM-DD in `timezone`) of the `days` days ending with `at`'s, oldest first. */
export function lastDates(at: number, timezone: string, days: number): string[] {
  const dates: string[] = [];
  // Noon steps never skip or repeat a date across daylight-saving changes.
  const today = periodOf(at, timezone).date;
  const noon = Date.parse(`${today}T12:00:00Z`);
  for (let i = days - 1; i >= 0; i--) dates.push(new Date(noon - i * 86_400_000).toISOString().slice(0, 10));
  return dates;
}
