/**
 * The Redis side of the operations view in one read-only object: what
 * `magpie status`, the dashboard and `/metrics` read (worker beats, queue
 * depths and failures, running and finished turns, helpers, token use,
 * cool-downs, schedules), so they never hold the raw connection. Implements
 * the `OpsReader` port of src/ops/ports.ts structurally.
 */

import type { Redis } from 'ioredis';
import type { PendingApproval } from '../messages/approval.js';
import type { CooldownEntry } from '../messages/cooldown.js';
import type { HelperRecord } from '../messages/helper-job.js';
import { RedisApprovals } from './approvals.js';
import { BoardQueues } from './board-queues.js';
import { RedisCooldownStore } from './cooldown-store.js';
import { CronStore, type HeartbeatSchedule, type ListedTask } from './cron-store.js';
import { type DeliveryFailure, readDeliveryFailures } from './delivery-failures.js';
import { RedisHelperTracker } from './helper-records.js';
import {
  discoverQueues,
  lastFailures,
  type QueueDepth,
  type QueueFailure,
  queueDepths,
} from './queue-stats.js';
import { redisVersion } from './redis.js';
import { type RunningTurn, readRunning, readTurns, type StoredTurn } from './turn-records.js';
import { type ReadUsageOptions, readTotals, readUsage, type UsageReport } from './usage-records.js';
import { listWorkers, type WorkerBeat } from './worker-beats.js';

export class RedisOpsReader {
  /** `redis` is borrowed (not closed here). */
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** The approval questions stored now (waiting or being settled), soonest to expire first. */
  approvals(): Promise<PendingApproval[]> {
    return new RedisApprovals(this.redis, this.prefix).list();
  }

  /** The Redis server's version, when it says. */
  redisVersion(): Promise<string | undefined> {
    return redisVersion(this.redis);
  }

  /** Workers whose heartbeat is current. */
  workers(): Promise<WorkerBeat[]> {
    return listWorkers(this.redis, this.prefix);
  }

  /** The names of the queues under the prefix. */
  queues(): Promise<string[]> {
    return discoverQueues(this.redis, this.prefix);
  }

  queueDepths(names: string[]): Promise<QueueDepth[]> {
    return queueDepths(this.redis, this.prefix, names);
  }

  /** The newest `count` failed jobs over all `names`, newest first. */
  lastFailures(names: string[], count?: number): Promise<QueueFailure[]> {
    return lastFailures(this.redis, this.prefix, names, count);
  }

  /** The newest `count` sends a platform reported failed after accepting them, newest first. */
  deliveryFailures(count?: number): Promise<DeliveryFailure[]> {
    return readDeliveryFailures(this.redis, this.prefix, count);
  }

  running(): Promise<RunningTurn[]> {
    return readRunning(this.redis, this.prefix);
  }

  /** The newest `count` finished turns. */
  turns(count?: number): Promise<StoredTurn[]> {
    return readTurns(this.redis, this.prefix, count);
  }

  helpers(): Promise<HelperRecord[]> {
    return new RedisHelperTracker(this.redis, this.prefix).list();
  }

  usage(options: ReadUsageOptions): Promise<UsageReport> {
    return readUsage(this.redis, this.prefix, options);
  }

  /** The all-time totals hash (`/metrics`). */
  totals(): Promise<Record<string, string>> {
    return readTotals(this.redis, this.prefix);
  }

  /** Model endpoints resting after failures. */
  cooldowns(): Promise<CooldownEntry[]> {
    return new RedisCooldownStore(this.redis, this.prefix).list();
  }

  /** The heartbeat's job scheduler and every scheduled task. */
  async schedules(): Promise<{ heartbeat: HeartbeatSchedule | undefined; tasks: ListedTask[] }> {
    const store = new CronStore({ connection: this.redis, prefix: this.prefix });
    try {
      const [heartbeat, tasks] = await Promise.all([store.heartbeatSchedule(), store.list()]);
      return { heartbeat, tasks };
    } finally {
      await store.close();
    }
  }

  /** Bull Board's queues (the caller closes them), named `<label>:<queue>` when a label is given. */
  boardQueues(label?: string): BoardQueues {
    return new BoardQueues(this.redis, this.prefix, label);
  }
}
