/**
 * What the operations view (status, dashboard, `/metrics`) reads, as a port:
 * read-only, no raw Redis connection. `RedisOpsReader` (src/bus/ops-reader.ts)
 * implements it; the composition root and the CLI pass it in.
 */
import type { BaseAdapter } from '@bull-board/api/baseAdapter';
import type { HeartbeatSchedule, ListedTask } from '../bus/cron-store.js';
import type { DeliveryFailure } from '../bus/delivery-failures.js';
import type { QueueDepth, QueueFailure } from '../bus/queue-stats.js';
import type { RunningTurn, StoredTurn } from '../bus/turn-records.js';
import type { ReadUsageOptions, UsageReport } from '../bus/usage-records.js';
import type { WorkerBeat } from '../bus/worker-beats.js';
import type { PendingApproval } from '../messages/approval.js';
import type { CooldownEntry } from '../messages/cooldown.js';
import type { HelperRecord } from '../messages/helper-job.js';

/** Bull Board's queues: adapters of the queues found since the last call; closed with the dashboard. */
export interface BoardQueueSource {
  added(): Promise<BaseAdapter[]>;
  close(): Promise<void>;
}

/** The operations view's reads. */
export interface OpsReader {
  redisVersion(): Promise<string | undefined>;
  workers(): Promise<WorkerBeat[]>;
  queues(): Promise<string[]>;
  queueDepths(names: string[]): Promise<QueueDepth[]>;
  lastFailures(names: string[], count?: number): Promise<QueueFailure[]>;
  /** Sends a platform accepted and reported failed afterwards (a WhatsApp `failed` status), newest first. */
  deliveryFailures(count?: number): Promise<DeliveryFailure[]>;
  running(): Promise<RunningTurn[]>;
  turns(count?: number): Promise<StoredTurn[]>;
  helpers(): Promise<HelperRecord[]>;
  /** Approval questions stored now (waiting or being settled). */
  approvals(): Promise<PendingApproval[]>;
  usage(options: ReadUsageOptions): Promise<UsageReport>;
  totals(): Promise<Record<string, string>>;
  cooldowns(): Promise<CooldownEntry[]>;
  schedules(): Promise<{ heartbeat: HeartbeatSchedule | undefined; tasks: ListedTask[] }>;
  /** Bull Board's queues; with `label` (another agent's id) each is named `<label>:<queue>`. */
  boardQueues(label?: string): BoardQueueSource;
}
