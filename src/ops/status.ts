/**
 * `magpie status` as data: everything read from Redis (and a file count of
 * the sessions folder) in parallel, so it takes well under a second and is
 * safe while the daemon works. Running turns of workers whose heartbeat is
 * gone are left out (a crashed worker's entries). Token use comes from the
 * per-day and per-session hashes the workers keep (bus/usage-records.ts).
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { BudgetView } from '../budget/report.js';
import type { DeliveryFailure } from '../bus/delivery-failures.js';
import type { QueueDepth, QueueFailure } from '../bus/queue-stats.js';
import { displayUrl } from '../bus/redis.js';
import type { RunningTurn, StoredTurn } from '../bus/turn-records.js';
import type { UsageReport } from '../bus/usage-records.js';
import type { WorkerBeat } from '../bus/worker-beats.js';
import { AppError, describeError } from '../errors/index.js';
import type { HelperRecord } from '../messages/helper-job.js';
import type { TokenPrices } from '../messages/token-counts.js';
import { isMissing } from '../workspace/cached-file.js';
import { type BudgetStatus, collectBudgetStatus } from './budget-status.js';
import { collectModelStatus, type ModelsReport } from './model-status.js';
import type { OpsReader } from './ports.js';
import { listSchedules, type ScheduleView } from './schedules.js';

/** One error worth showing: a failed job or a failed turn. */
export interface StatusError {
  at: string;
  source: string;
  message: string;
}

/** Everything `magpie status --json` prints. */
export interface StatusReport {
  redis: { url: string; version: string | undefined };
  prefix: string;
  workers: WorkerBeat[];
  queues: QueueDepth[];
  running: Array<RunningTurn & { seconds: number }>;
  helpers: HelperRecord[];
  /** Approval questions waiting for a person (or being settled). */
  approvals: Array<{ code: string; chat: string; state: string; summary: string; expiresAt: string }>;
  schedules: ScheduleView;
  sessions: number;
  /** Tokens today, since the start and per session (cached ones too), with costs when priced. */
  usage: UsageReport;
  /** Spend against each limit set and the calls-per-minute guard (absent: no budget view given). */
  budget?: BudgetStatus;
  /** Which models answered the recent turns, fallbacks, and models resting after failures. */
  models: ModelsReport;
  errors: StatusError[];
  /** The last backup recorded (absent: none, or not asked for). */
  backup?: LastBackupView;
  /** Milliseconds the collection took. */
  tookMs: number;
}

export interface CollectStatusOptions {
  /** The bus's read side (bus/ops-reader.ts). */
  reader: OpsReader;
  /** The Redis URL (printed with the password hidden), or the bus's `describe()` (Sentinel, Cluster). */
  url: string;
  prefix: string;
  workspace: string;
  /** Errors listed. @defaultValue 5 */
  errors?: number;
  /** IANA time zone of "today" (MAGPIE_TIMEZONE). @defaultValue the system's time zone */
  timezone?: string;
  /** Prices per million tokens (MAGPIE_PRICE_*): costs are estimated. @defaultValue none */
  prices?: TokenPrices;
  /** The spending limits' counters (src/budget/report.ts budgetView). @defaultValue none: no budget section */
  budget?: BudgetView;
  /** The last backup recorded (bus/backup-store.ts). @defaultValue none: no backup line */
  lastBackup?: () => Promise<LastBackupView | undefined>;
}

/** The last backup: its file, when it finished (ISO) and its size. */
export interface LastBackupView {
  file: string;
  at: string;
  bytes: number;
}

/** Collects the status report. */
export async function collectStatus(options: CollectStatusOptions): Promise<StatusReport> {
  const started = performance.now();
  const { reader, prefix } = options;
  const queues = await reader.queues();
  const timezone = options.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  const usage = reader.usage({ timezone, ...(options.prices ? { prices: options.prices } : {}) });
  const [
    version,
    workers,
    depths,
    running,
    helpers,
    approvals,
    schedules,
    sessions,
    failures,
    turns,
    deliveries,
    budget,
  ] = await Promise.all([
    reader.redisVersion(),
    reader.workers(),
    reader.queueDepths(queues),
    reader.running(),
    reader.helpers(),
    reader.approvals(),
    listSchedules(reader),
    countSessions(options.workspace),
    reader.lastFailures(queues, options.errors ?? 5),
    reader.turns(100),
    reader.deliveryFailures(options.errors ?? 5),
    options.budget ? collectBudgetStatus(options.budget) : undefined,
  ]);
  const backup = await options.lastBackup?.();
  const alive = new Set(workers.map((w) => w.id));
  const now = Date.now();
  return {
    // A URL loses its password; a Sentinel's or Cluster's description (bus.describe()) holds none.
    redis: { url: URL.canParse(options.url) ? displayUrl(options.url) : options.url, version },
    prefix,
    workers,
    queues: depths,
    running: running
      .filter((r) => alive.has(r.worker))
      .map((r) => ({ ...r, seconds: Math.round((now - Date.parse(r.since)) / 1000) })),
    helpers,
    approvals: approvals.map((p) => ({
      code: p.code,
      chat: `${p.target.channel}:${p.target.chatId}`,
      state: p.state,
      summary: p.summary,
      expiresAt: p.expiresAt,
    })),
    schedules,
    sessions,
    usage: await usage,
    ...(budget ? { budget } : {}),
    models: await collectModelStatus(reader, turns),
    errors: mergeErrors(failures, turns, deliveries, options.errors ?? 5),
    ...(backup ? { backup } : {}),
    tookMs: Math.round(performance.now() - started),
  };
}

function mergeErrors(
  failures: QueueFailure[],
  turns: StoredTurn[],
  deliveries: DeliveryFailure[],
  count: number,
): StatusError[] {
  const out = [
    ...failures.map((f) => ({ at: f.at, source: `${f.queue} job ${f.job}`, message: f.reason })),
    ...deliveries.map((d) => ({
      at: d.at,
      source: `${d.channel} delivery to ${d.chatId}`,
      message: d.reason,
    })),
    ...turns
      .filter((t) => t.error !== undefined)
      .map((t) => ({ at: t.at, source: `turn ${t.session}`, message: t.error ?? '' })),
  ];
  return out
    .sort((a, b) => b.at - a.at)
    .slice(0, count)
    .map((e) => ({ ...e, at: new Date(e.at).toISOString() }));
}

/** Number of session logs (`*.jsonl`) in `<workspace>/sessions`; 0 when there is none. */
export async function countSessions(workspace: string): Promise<number> {
  try {
    const names = await readdir(path.join(workspace, 'sessions'));
    return names.filter((n) => n.endsWith('.jsonl')).length;
  } catch (err) {
    if (isMissing(err)) return 0;
    throw new AppError('INTERNAL', `the sessions folder is unreadable: ${describeError(err)}`, {
      cause: err,
    });
  }
}
