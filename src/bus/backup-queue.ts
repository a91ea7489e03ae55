/**
 * Scheduled backups on their own BullMQ queue (`backup`): a job scheduler
 * makes one job per tick, however many workers run, and one worker takes it;
 * a job that crashed half-way is redone. `src/backup/schedule.ts` does the
 * work, so the backup never imports bullmq.
 */
import { type Job, Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';

/** The queue of scheduled backups. */
export const BACKUP_QUEUE = 'backup';
const SCHEDULER_ID = 'backup';

/** When backups run: daily at a time of day in a time zone, or (tests) every so many ms. */
export type BackupRepeat = { hour: number; minute: number; timezone: string } | { everyMs: number };

/** Options of {@link BackupQueue}. */
export interface BackupQueueOptions {
  /** The bus's command connection (borrowed). */
  redis: Redis;
  /** Makes a worker connection (`maxRetriesPerRequest: null`), only when a schedule is set; disconnected by `close()`. */
  workerConnection: () => Redis;
  prefix: string;
  /** When to back up; undefined removes the schedule (MAGPIE_BACKUP_SCHEDULE unset). */
  repeat: BackupRepeat | undefined;
  /** Makes one backup; `id` names the tick (the same when a crashed job is redone). */
  run: (tick: { id: string; at: number }) => Promise<void>;
  logger: Logger;
}

/** When a tick was due: a scheduler's job id ends in it (`repeat:backup:<ms>`); else the job's creation. */
function tickOf(job: Job): number {
  const due = Number(/:(\d+)$/.exec(job.id ?? '')?.[1]);
  return Number.isFinite(due) && due > 0 ? due : job.timestamp;
}

/** The backup schedule and this process's worker for it. */
export class BackupQueue {
  private readonly queue: Queue;
  private worker: Worker | undefined;
  private connection: Redis | undefined;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: BackupQueueOptions) {
    this.queue = new Queue(BACKUP_QUEUE, { connection: options.redis, prefix: options.prefix });
    // Its connection's errors (Redis away) are the bus's, logged there; without a listener BullMQ
    // printed each one's stack on stderr.
    this.queue.on('error', () => undefined);
  }

  /** Upserts (or removes) the job scheduler and starts taking jobs when one is set. */
  async start(): Promise<void> {
    const { repeat, logger } = this.options;
    if (!repeat) {
      await this.queue.removeJobScheduler(SCHEDULER_ID);
      return;
    }
    const every =
      'everyMs' in repeat
        ? { every: repeat.everyMs }
        : { pattern: `${repeat.minute} ${repeat.hour} * * *`, tz: repeat.timezone };
    await this.queue.upsertJobScheduler(SCHEDULER_ID, every, {
      name: 'backup',
      opts: {
        attempts: 2,
        backoff: { type: 'fixed', delay: 60_000 },
        removeOnComplete: 20,
        removeOnFail: 20,
      },
    });
    this.connection = this.options.workerConnection();
    this.worker = new Worker(
      BACKUP_QUEUE,
      async (job: Job) => {
        await this.options.run({ id: job.id ?? String(job.timestamp), at: tickOf(job) });
        return 'backed up';
      },
      { connection: this.connection, prefix: this.options.prefix, concurrency: 1 },
    );
    this.worker.on('failed', (job, err) =>
      logger.error({ job: job?.id, err: describeError(err) }, 'scheduled backup failed'),
    );
    this.worker.on('error', (err) => logger.warn({ err: describeError(err) }, 'backup queue worker error'));
    await this.worker.waitUntilReady();
  }

  /** Stops taking jobs (a running backup finishes), closes the queue. Same promise every time. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        await this.worker?.close();
        await this.queue.close();
      } catch (err) {
        this.options.logger.warn({ err: describeError(err) }, 'closing the backup queue failed');
      } finally {
        this.connection?.disconnect();
      }
    })();
    return this.closing;
  }
}
