/**
 * The budget's ports: the store that holds limits and spend (Redis in the
 * daemon: src/bus/budget-store.ts) and what an unattended runner (heartbeat,
 * cron, helpers) asks before it starts.
 */
import type {
  BudgetLimitName,
  BudgetPeriod,
  DaySpend,
  LimitCounters,
  Reservation,
  ReserveResult,
  Settlement,
  StoreLimits,
} from '../messages/budget.js';

/** Limits, reservations and spend, shared by every worker. */
export interface BudgetStore {
  reserve(
    session: string,
    period: BudgetPeriod,
    estimate: { costNano: number; tokens: number },
    limits: StoreLimits,
  ): Promise<ReserveResult>;
  settle(reservation: Reservation, actual: Settlement, limits: StoreLimits): Promise<BudgetLimitName[]>;
  release(reservation: Reservation, limits: StoreLimits): Promise<void>;
  counters(session: string, period: Pick<BudgetPeriod, 'date' | 'month'>): Promise<LimitCounters>;
  skipped(kind: string, date: string): Promise<void>;
  days(dates: readonly string[]): Promise<DaySpend[]>;
}

/** What heartbeat, cron and helper runs ask before they start (src/budget/budget.ts implements it). */
export interface UnattendedBudget {
  /** The line a user would read if `session` called the model now; undefined: within every limit. */
  blocked(session: string): Promise<string | undefined>;
  /** Counts a `kind` (heartbeat, cron, helper) turn skipped at a limit. */
  skipped(kind: string): Promise<void>;
}
