/**
 * What `/usage` and `magpie usage` show: settled spend per day, per chat and
 * per model from the budget store, summed over today and this month, with
 * the limits. One reader, so the chat command and the CLI agree to the cent.
 */
import type { DaySpend, SpendFigures } from '../messages/budget.js';
import { emptySpend } from '../messages/budget.js';
import { formatCost } from '../messages/token-counts.js';
import { type Budget, lastDates } from './budget.js';

/** `magpie usage --json`. */
export interface UsageSummary {
  timezone: string;
  date: string;
  month: string;
  today: SpendFigures;
  thisMonth: SpendFigures;
  /** The last `days` days, oldest first. */
  days: DaySpend[];
  limits: {
    daily?: number;
    monthly?: number;
    chatDaily?: number;
    dailyTokens?: number;
    maxCallsPerMinute: number;
  };
}

/** Today's and this month's figures and the last `days` days (at least today), now on the budget's clock unless given. */
export async function readUsageSummary(
  budget: Budget,
  options: { days?: number; now?: number } = {},
): Promise<UsageSummary> {
  const now = options.now ?? budget.now();
  const period = budget.period(now);
  const dayOfMonth = Number(period.date.slice(8));
  const span = Math.max(options.days ?? 7, dayOfMonth);
  const days = await budget.store.days(lastDates(now, budget.timezone, span));
  const inMonth = days.filter((d) => d.date.startsWith(period.month));
  const { config } = budget;
  return {
    timezone: budget.timezone,
    date: period.date,
    month: period.month,
    today: days.at(-1)?.total ?? emptySpend(),
    thisMonth: sumFigures(inMonth.map((d) => d.total)),
    days: days.slice(-(options.days ?? 7)),
    limits: {
      ...(config.daily !== undefined ? { daily: config.daily } : {}),
      ...(config.monthly !== undefined ? { monthly: config.monthly } : {}),
      ...(config.chatDaily !== undefined ? { chatDaily: config.chatDaily } : {}),
      ...(config.dailyTokens !== undefined ? { dailyTokens: config.dailyTokens } : {}),
      maxCallsPerMinute: config.maxCallsPerMinute,
    },
  };
}

/**
 * What the operations view (status, the dashboard's charts, `/metrics`) reads
 * of the limits; {@link budgetView} builds it from a Budget.
 */
export interface BudgetView {
  /** IANA zone of the days and months (MAGPIE_TIMEZONE). */
  readonly timezone: string;
  /** The limits set, by name (`daily`, `monthly`, `chat_daily`, `daily_tokens`, `per_minute`; money in the prices' currency). */
  readonly limits: Readonly<Record<string, number>>;
  /** What counts against the limits now (`daily`, `monthly` in money, `daily_tokens`), calls in flight included. */
  spent(): Promise<Record<string, number>>;
  /** Settled use of the last `days` days and of this month, as `magpie usage --json` prints it. */
  summary(days: number): Promise<UsageSummary>;
}

/** The operations view of `budget`. */
export function budgetView(budget: Budget): BudgetView {
  return {
    timezone: budget.timezone,
    limits: budget.limitValues(),
    spent: () => budget.spentNow(),
    summary: (days) => readUsageSummary(budget, { days }),
  };
}

/** Field-by-field sum. */
export function sumFigures(list: readonly SpendFigures[]): SpendFigures {
  const out = emptySpend();
  for (const f of list) {
    for (const key of Object.keys(out) as Array<keyof SpendFigures>) out[key] += f[key];
  }
  return out;
}

/** `12,345 tokens (8,000 cached), 3 calls, 0.0123` */
export function describeSpend(f: SpendFigures): string {
  const n = (x: number) => x.toLocaleString('en-US');
  return `${n(f.promptTokens + f.completionTokens)} tokens (${n(f.cachedTokens)} cached), ${n(f.calls)} calls, cost ${formatMoney(f.cost)}`;
}

/** A cost to the cent, with more digits below one cent so small sums are not shown as 0. */
export function formatMoney(cost: number): string {
  return cost >= 0.01 || cost === 0 ? cost.toFixed(2) : formatCost(cost);
}

/** The limits in one line, or that none is set. */
export function describeLimits(limits: UsageSummary['limits']): string {
  const parts: string[] = [];
  if (limits.daily !== undefined) parts.push(`${limits.daily.toFixed(2)} a day`);
  if (limits.monthly !== undefined) parts.push(`${limits.monthly.toFixed(2)} a month`);
  if (limits.chatDaily !== undefined) parts.push(`${limits.chatDaily.toFixed(2)} a day per chat`);
  if (limits.dailyTokens !== undefined)
    parts.push(`${limits.dailyTokens.toLocaleString('en-US')} tokens a day`);
  parts.push(`${limits.maxCallsPerMinute} model calls a minute per chat`);
  return `Limits: ${parts.join(', ')}.`;
}

/** `/usage` in a chat: this chat's and everything's figures today and this month, and the limits. */
export async function usageText(budget: Budget, session: string, now?: number): Promise<string> {
  const s = await readUsageSummary(budget, now === undefined ? {} : { now });
  const inMonth = s.days.length > 0 ? await budget.store.days(monthDates(s)) : [];
  const chatMonth = sumFigures(inMonth.map((d) => d.bySession[session] ?? emptySpend()));
  const chatToday = inMonth.find((d) => d.date === s.date)?.bySession[session] ?? emptySpend();
  return [
    `Usage (${s.timezone}):`,
    `This chat today: ${describeSpend(chatToday)}`,
    `This chat this month: ${describeSpend(chatMonth)}`,
    `Everything today: ${describeSpend(s.today)}`,
    `Everything this month: ${describeSpend(s.thisMonth)}`,
    describeLimits(s.limits),
  ].join('\n');
}

function monthDates(s: UsageSummary): string[] {
  const last = Number(s.date.slice(8));
  return Array.from({ length: last }, (_, i) => `${s.month}-${String(i + 1).padStart(2, '0')}`);
}
