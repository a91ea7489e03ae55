/**
 * The bus's queues as the operations view sees them: their names (the known
 * ones plus every `outbound-<channel>` found in Redis), depths per state and
 * the last failures. BullMQ is read through short-lived Queue objects on a
 * borrowed connection, so this works from any process, daemon or not.
 */
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { SCHEDULED_QUEUE } from './cron-store.js';
import { HELPERS_QUEUE } from './helpers-queue.js';
import { outboundQueueKeyHead } from './keys.js';
import { INBOUND_QUEUE } from './queues.js';
import { scanKeys } from './redis.js';

/** Depths of one queue. */
export interface QueueDepth {
  name: string;
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
}

/** A failed job's reason. */
export interface QueueFailure {
  queue: string;
  job: string;
  /** When it failed (ms since the epoch). */
  at: number;
  reason: string;
}

/** Names of the bus's queues under `prefix`: inbound, scheduled, helpers and each outbound-<channel> seen. */
export async function discoverQueues(redis: Redis, prefix: string): Promise<string[]> {
  const names = new Set<string>([INBOUND_QUEUE, SCHEDULED_QUEUE, HELPERS_QUEUE]);
  const head = outboundQueueKeyHead(prefix);
  for (const key of await scanKeys(redis, `${head}*:meta`))
    names.add(key.slice(prefix.length + 1, -':meta'.length));
  for (const key of await scanKeys(redis, `${head}*:id`))
    names.add(key.slice(prefix.length + 1, -':id'.length));
  return [...names].sort((a, b) => order(a) - order(b) || a.localeCompare(b));
}

function order(name: string): number {
  if (name === INBOUND_QUEUE) return 0;
  if (name.startsWith('outbound-')) return 1;
  return 2;
}

/** Runs `fn` on Queue objects for `names` (on the borrowed connection), then closes them. */
export async function withQueues<T>(
  redis: Redis,
  prefix: string,
  names: string[],
  fn: (queues: Queue[]) => Promise<T>,
): Promise<T> {
  const queues = names.map((name) => {
    const queue = new Queue(name, { connection: redis, prefix });
    // The borrowed connection's errors are re-emitted here; unheard, BullMQ prints them (`fn`'s reads reject instead).
    queue.on('error', () => undefined);
    return queue;
  });
  try {
    return await fn(queues);
  } finally {
    await Promise.all(queues.map((q) => q.close().catch(() => undefined)));
  }
}

/** Depths (waiting incl. prioritized, active, delayed, failed) of each queue. */
export async function queueDepths(redis: Redis, prefix: string, names: string[]): Promise<QueueDepth[]> {
  return withQueues(redis, prefix, names, (queues) =>
    Promise.all(
      queues.map(async (q) => {
        const c = await q.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed');
        return {
          name: q.name,
          waiting: (c.waiting ?? 0) + (c.prioritized ?? 0),
          active: c.active ?? 0,
          delayed: c.delayed ?? 0,
          failed: c.failed ?? 0,
        };
      }),
    ),
  );
}

/** The newest `count` failures over all `names`, newest first. */
export async function lastFailures(
  redis: Redis,
  prefix: string,
  names: string[],
  count = 5,
): Promise<QueueFailure[]> {
  return withQueues(redis, prefix, names, async (queues) => {
    const all: QueueFailure[] = [];
    for (const q of queues) {
      for (const job of await q.getFailed(0, count - 1)) {
        if (!job) continue;
        all.push({
          queue: q.name,
          job: job.id ?? '?',
          at: job.finishedOn ?? job.timestamp,
          reason: (job.failedReason ?? 'unknown').split('\n')[0] ?? '',
        });
      }
    }
    return all.sort((a, b) => b.at - a.at).slice(0, count);
  });
}
