/** The usage charts' data and the budget's status lines, from figures as the budget store reads them. */
import { describe, expect, it } from 'vitest';
import type { UsageSummary } from '../../../src/budget/report.js';
import { type DaySpend, emptySpend, type SpendFigures } from '../../../src/messages/budget.js';
import { formatBudgetLines } from '../../../src/ops/budget-status.js';
import { MAX_SERIES, usageChartData } from '../../../src/ops/usage-charts.js';

function figures(cost: number, promptTokens = 0, cachedTokens = 0, completionTokens = 0): SpendFigures {
  return { ...emptySpend(), cost, promptTokens, cachedTokens, completionTokens, calls: 1 };
}

function day(date: string, bySession: Record<string, SpendFigures>, callsByHour = {}): DaySpend {
  const total = emptySpend();
  for (const f of Object.values(bySession)) {
    for (const k of Object.keys(total) as Array<keyof SpendFigures>) total[k] += f[k];
  }
  return { date, total, bySession, byModel: { m: total }, callsByHour, skipped: {}, refused: {} };
}

function summary(days: DaySpend[]): UsageSummary {
  return {
    timezone: 'UTC',
    date: days.at(-1)?.date ?? '2025-03-02',
    month: '2025-03',
    today: days.at(-1)?.total ?? emptySpend(),
    thisMonth: emptySpend(),
    days,
    limits: { daily: 2, maxCallsPerMinute: 30 },
  };
}

describe('usageChartData', () => {
  it('stacks per day by chat, largest first, with zero on days a chat had nothing; cached share and calls per hour', () => {
    const data = usageChartData(
      summary([
        day('2025-03-01', { 'a:1': figures(0.1, 1000, 250, 100) }, { '09': 2 }),
        day('2025-03-02', { 'a:1': figures(0.2, 1000, 500, 100), 'b:2': figures(0.5, 3000, 0, 50) }),
        day('2025-03-03', {}),
      ]),
    );
    expect(data.any).toBe(true);
    expect(data.days).toEqual(['2025-03-01', '2025-03-02', '2025-03-03']);
    expect(data.cost.byChat).toEqual([
      { label: 'b:2', values: [0, 0.5, 0] },
      { label: 'a:1', values: [0.1, 0.2, 0] },
    ]);
    expect(data.tokens.byChat[0]).toEqual({ label: 'b:2', values: [0, 3050, 0] });
    expect(data.cachedShare).toEqual([25, 12.5, null]);
    expect(data.hours).toHaveLength(72);
    expect(data.hours[9]).toBe('2025-03-01 09');
    expect(data.calls[9]).toBe(2);
    expect(data.calls.reduce((a, b) => a + b, 0)).toBe(2);
  });

  it(`draws at most ${MAX_SERIES} series: the smallest chats are summed as others`, () => {
    const chats = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`c:${i}`, figures(i + 1)]));
    const series = usageChartData(summary([day('2025-03-01', chats)])).cost.byChat;
    expect(series).toHaveLength(MAX_SERIES);
    expect(series[0]).toEqual({ label: 'c:11', values: [12] });
    expect(series.at(-1)).toEqual({ label: '5 others', values: [1 + 2 + 3 + 4 + 5] });
  });

  it('has nothing to draw before the first call', () => {
    const data = usageChartData(summary([day('2025-03-01', {})]));
    expect(data.any).toBe(false);
    expect(data.cost.byChat).toEqual([]);
    expect(data.cachedShare).toEqual([null]);
  });
});

describe('formatBudgetLines', () => {
  it('shows spend without a limit, and the guard', () => {
    expect(
      formatBudgetLines({
        timezone: 'UTC',
        today: { cost: 0.004, tokens: 12_345 },
        thisMonth: { cost: 1.5 },
        limits: [],
        maxCallsPerMinute: 30,
      }),
    ).toEqual([
      'Budget     no limit set (MAGPIE_BUDGET_*): today 0.004 and 12,345 tokens, this month 1.50 (UTC)',
      '  calls          at most 30 model calls a minute per chat',
    ]);
  });

  it('shows a token limit in tokens, a per-chat limit with no chat yet, and a spend past a limit', () => {
    expect(
      formatBudgetLines({
        timezone: 'UTC',
        today: { cost: 2.5, tokens: 1_500_000 },
        thisMonth: { cost: 2.5 },
        limits: [
          { name: 'daily', limit: 2, spent: 2.5 },
          { name: 'daily_tokens', limit: 2_000_000, spent: 1_500_000 },
          { name: 'chat_daily', limit: 0.5, spent: 0 },
        ],
        maxCallsPerMinute: 10,
      }).slice(1),
    ).toEqual([
      '  today          2.50 of 2.00 (125%)',
      '  tokens today   1,500,000 of 2,000,000 (75%)',
      '  one chat today 0.00 of 0.50 (0%), no chat yet',
      '  calls          at most 10 model calls a minute per chat',
    ]);
  });
});
