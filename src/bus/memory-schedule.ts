/**
 * The daily memory consolidation's job scheduler on the `scheduled` queue
 * (beside the heartbeat's, see cron-store.ts): a cron pattern at
 * MAGPIE_MEMORY_CONSOLIDATE in the configured time zone, so one job fires per
 * day however many workers run. The job carries nothing; the worker that
 * takes it runs the consolidation (src/app/memory-jobs.ts).
 */
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { SCHEDULED_QUEUE } from './cron-store.js';

/** The consolidation job's name on the scheduled queue. */
export const CONSOLIDATE_JOB = 'memory-consolidate';
const SCHEDULER_ID = 'memory-consolidate';

/** Where the scheduler is kept: a Redis connection (borrowed, not closed) and the key prefix. */
export interface ScheduleTarget {
  connection: Redis;
  prefix: string;
}

/**
 * Upserts the consolidation's job scheduler for `at` (HH:MM in `timezone`), or removes it
 * when `at` is undefined. True when a scheduler was upserted or removed.
 *
 * @example await scheduleConsolidation({ connection: bus.redis, prefix: bus.prefix }, '03:30', 'Europe/Lisbon')
 */
export async function scheduleConsolidation(
  target: ScheduleTarget,
  at: string | undefined,
  timezone: string,
): Promise<boolean> {
  const queue = new Queue(SCHEDULED_QUEUE, { connection: target.connection, prefix: target.prefix });
  try {
    if (at === undefined) return await queue.removeJobScheduler(SCHEDULER_ID);
    const [hours, minutes] = at.split(':').map(Number);
    await queue.upsertJobScheduler(
      SCHEDULER_ID,
      { pattern: `${minutes} ${hours} * * *`, tz: timezone },
      {
        name: CONSOLIDATE_JOB,
        data: {},
        opts: {
          attempts: 3,
          backoff: { type: 'exponential', delay: 60_000 },
          removeOnComplete: { count: 30 },
          removeOnFail: { count: 30 },
        },
      },
    );
    return true;
  } finally {
    await queue.close();
  }
}
