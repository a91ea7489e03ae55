/**
 * The budget as `magpie status` and the dashboard's overview show it: what
 * counts against each limit that is set now (calls in flight included),
 * today's and this month's spend, and the calls-per-minute guard. One
 * formatter, so the terminal and the dashboard print the same lines.
 */
import type { BudgetView } from '../budget/report.js';
import { formatMoney } from '../budget/report.js';

/** A limit that is set and what counts against it now. */
export interface BudgetLimitStatus {
  name: 'daily' | 'monthly' | 'chat_daily' | 'daily_tokens';
  limit: number;
  spent: number;
  /** chat_daily: the chat that spent the most today (settled calls). */
  chat?: string;
}

/** `magpie status --json`'s `budget`. */
export interface BudgetStatus {
  timezone: string;
  /** Money in the prices' currency; tokens as counted against MAGPIE_BUDGET_DAILY_TOKENS. */
  today: { cost: number; tokens: number };
  thisMonth: { cost: number };
  limits: BudgetLimitStatus[];
  maxCallsPerMinute: number;
}

/** Reads the budget's counters (and today's busiest chat when a per-chat limit is set). */
export async function collectBudgetStatus(view: BudgetView): Promise<BudgetStatus> {
  const spent = await view.spent();
  const set = view.limits;
  const limits: BudgetLimitStatus[] = [];
  for (const name of ['daily', 'monthly', 'daily_tokens'] as const) {
    const limit = set[name];
    if (limit !== undefined) limits.push({ name, limit, spent: spent[name] ?? 0 });
  }
  if (set.chat_daily !== undefined) {
    const summary = await view.summary(1);
    const chats = Object.entries(summary.days.at(-1)?.bySession ?? {}).sort((a, b) => b[1].cost - a[1].cost);
    const [chat, figures] = chats[0] ?? [];
    limits.push({
      name: 'chat_daily',
      limit: set.chat_daily,
      spent: figures?.cost ?? 0,
      ...(chat !== undefined ? { chat } : {}),
    });
  }
  return {
    timezone: view.timezone,
    today: { cost: spent.daily ?? 0, tokens: spent.daily_tokens ?? 0 },
    thisMonth: { cost: spent.monthly ?? 0 },
    limits,
    maxCallsPerMinute: set.per_minute ?? 0,
  };
}

const LABELS: Record<BudgetLimitStatus['name'], string> = {
  daily: 'today',
  monthly: 'this month',
  chat_daily: 'one chat today',
  daily_tokens: 'tokens today',
};

/**
 * `Budget  today 0.42 of 2.00 (21%)` and one line per other limit set, then
 * the guard; without a limit, the spend and "no limit set".
 */
export function formatBudgetLines(b: BudgetStatus): string[] {
  const head = 'Budget     ';
  const guard = `  ${'calls'.padEnd(15)}at most ${b.maxCallsPerMinute} model calls a minute per chat`;
  if (b.limits.length === 0) {
    return [
      `${head}no limit set (MAGPIE_BUDGET_*): today ${formatMoney(b.today.cost)} and ${count(b.today.tokens)} tokens, this month ${formatMoney(b.thisMonth.cost)} (${b.timezone})`,
      guard,
    ];
  }
  const lines = [`${head}spent against the limits (${b.timezone}, calls in flight included)`];
  for (const l of b.limits) {
    const of =
      l.name === 'daily_tokens'
        ? `${count(l.spent)} of ${count(l.limit)}`
        : `${formatMoney(l.spent)} of ${l.limit.toFixed(2)}`;
    const most = l.name === 'chat_daily' ? (l.chat ? `, the most: ${l.chat}` : ', no chat yet') : '';
    lines.push(`  ${LABELS[l.name].padEnd(15)}${of} (${share(l.spent, l.limit)})${most}`);
  }
  lines.push(guard);
  return lines;
}

function count(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

function share(spent: number, limit: number): string {
  if (limit <= 0) return spent > 0 ? 'over' : '0%';
  return `${Math.round((100 * spent) / limit)}%`;
}
