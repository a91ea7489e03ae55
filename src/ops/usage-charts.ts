/**
 * The dashboard's usage charts as data (`/api/usage`): the settled spend the
 * budget store keeps per day, per chat, per model and per hour (the same
 * reader as `magpie usage`), shaped into the series the page draws with
 * uPlot: cost and tokens per day stacked by chat or by model, the cached
 * share of prompt tokens per day, and model calls per hour.
 */
import type { UsageSummary } from '../budget/report.js';
import type { DaySpend, SpendFigures } from '../messages/budget.js';

/** Series drawn one by one; the rest are summed into one "others" series. */
export const MAX_SERIES = 8;

/** One stacked series: a chat's or a model's figure on each day. */
export interface ChartSeries {
  label: string;
  values: number[];
}

/** What `/api/usage` answers. */
export interface UsageChartData {
  timezone: string;
  /** Today (YYYY-MM-DD in `timezone`). */
  date: string;
  /** The days shown, oldest first. */
  days: string[];
  /** False when no model call was settled on any of the days: the page says "no usage yet". */
  any: boolean;
  /** Cost per day (the prices' currency), stacked by chat and by model, largest first. */
  cost: { byChat: ChartSeries[]; byModel: ChartSeries[] };
  /** Tokens (prompt and completion) per day, stacked the same way. */
  tokens: { byChat: ChartSeries[]; byModel: ChartSeries[] };
  /** Cached tokens in percent of prompt tokens, per day (null: no prompt tokens that day). */
  cachedShare: Array<number | null>;
  /** Model calls per hour over the days: `hours[i]` is `YYYY-MM-DD HH`, `calls[i]` its count. */
  hours: string[];
  calls: number[];
  limits: UsageSummary['limits'];
}

/** The charts' series for `summary`. */
export function usageChartData(summary: UsageSummary): UsageChartData {
  const { days } = summary;
  const hours: string[] = [];
  const calls: number[] = [];
  for (const day of days) {
    for (let h = 0; h < 24; h++) {
      const hour = String(h).padStart(2, '0');
      hours.push(`${day.date} ${hour}`);
      calls.push(day.callsByHour[hour] ?? 0);
    }
  }
  return {
    timezone: summary.timezone,
    date: summary.date,
    days: days.map((d) => d.date),
    any: days.some((d) => d.total.calls > 0),
    cost: {
      byChat: stack(
        days,
        (d) => d.bySession,
        (f) => f.cost,
      ),
      byModel: stack(
        days,
        (d) => d.byModel,
        (f) => f.cost,
      ),
    },
    tokens: {
      byChat: stack(days, (d) => d.bySession, tokensOf),
      byModel: stack(days, (d) => d.byModel, tokensOf),
    },
    cachedShare: days.map((d) =>
      d.total.promptTokens > 0 ? round((100 * d.total.cachedTokens) / d.total.promptTokens, 1) : null,
    ),
    hours,
    calls,
    limits: summary.limits,
  };
}

function tokensOf(f: SpendFigures): number {
  return f.promptTokens + f.completionTokens;
}

/**
 * One series per name found in `table` on any day, largest total first; past
 * {@link MAX_SERIES} the smallest are summed as "others". Names with nothing are left out.
 */
function stack(
  days: readonly DaySpend[],
  table: (d: DaySpend) => Record<string, SpendFigures>,
  value: (f: SpendFigures) => number,
): ChartSeries[] {
  const byName = new Map<string, number[]>();
  days.forEach((day, i) => {
    for (const [name, figures] of Object.entries(table(day))) {
      let values = byName.get(name);
      if (!values) {
        values = days.map(() => 0);
        byName.set(name, values);
      }
      values[i] = value(figures);
    }
  });
  const total = (values: number[]) => values.reduce((a, b) => a + b, 0);
  const series = [...byName]
    .map(([label, values]) => ({ label, values }))
    .filter((s) => total(s.values) > 0)
    .sort((a, b) => total(b.values) - total(a.values) || a.label.localeCompare(b.label));
  if (series.length <= MAX_SERIES) return series;
  const kept = series.slice(0, MAX_SERIES - 1);
  const rest = series.slice(MAX_SERIES - 1);
  const others = days.map((_, i) => rest.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  return [...kept, { label: `${rest.length} others`, values: others }];
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
