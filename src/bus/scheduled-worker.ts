/**
 * The worker of the `scheduled` queue (heartbeat ticks and scheduled tasks,
 * see cron-store.ts): a BullMQ Worker behind small types, so the scheduler
 * never imports bullmq. A processor that throws an AppError INVALID_MESSAGE
 * drops the job at once (a malformed task cannot get better); any other
 * error retries it with the job's backoff.
 */
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { AppError, describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { CLOSE_TIMEOUT_MS, closedWithin } from './bounded-close.js';
import { SCHEDULED_QUEUE } from './cron-store.js';

/** A scheduled job as its processor sees it. */
export interface ScheduledJob {
  id: string;
  /** One of JOB_NAMES. */
  name: string;
  /** Raw payload: validate it before use. */
  data: unknown;
  /** When the job was created (ms since the epoch). */
  timestamp: number;
}

/** Handles one job; the string is kept as the job's result. */
export type ScheduledProcessor = (job: ScheduledJob) => Promise<string>;

/** Options of {@link ScheduledWorker}. */
export interface ScheduledWorkerOptions {
  /** A worker connection (`maxRetriesPerRequest: null`); disconnected by `close()`. */
  connection: Redis;
  /** The key prefix (config.redis.prefix). */
  prefix: string;
  processor: ScheduledProcessor;
  logger: Logger;
  /** Jobs run at once. @defaultValue 4 */
  concurrency?: number;
  /** Job lock, renewed while the job runs. @defaultValue 30000 */
  lockDurationMs?: number;
  /** How often crashed jobs are looked for. @defaultValue 15000 */
  stalledIntervalMs?: number;
}

/** Takes jobs of the scheduled queue until closed. */
export class ScheduledWorker {
  private readonly worker: Worker;
  private readonly connection: Redis;
  private readonly logger: Logger;
  private closing: Promise<void> | undefined;

  constructor(options: ScheduledWorkerOptions) {
    const { processor, logger } = options;
    this.connection = options.connection;
    this.logger = logger;
    this.worker = new Worker(
      SCHEDULED_QUEUE,
      async (job: Job) => {
        try {
          return await processor({
            id: job.id ?? '',
            name: job.name,
            data: job.data,
            timestamp: job.timestamp,
          });
        } catch (err) {
          if (err instanceof AppError && err.code === 'INVALID_MESSAGE')
            throw new UnrecoverableError(err.message);
          throw err;
        }
      },
      {
        connection: options.connection,
        prefix: options.prefix,
        concurrency: options.concurrency ?? 4,
        lockDuration: options.lockDurationMs ?? 30_000,
        stalledInterval: options.stalledIntervalMs ?? 15_000,
      },
    );
    this.worker.on('failed', (job, err) =>
      logger.warn({ job: job?.id, err: describeError(err) }, 'scheduled job failed'),
    );
    this.worker.on('error', (err) =>
      logger.warn({ err: describeError(err) }, 'scheduled queue worker error'),
    );
  }

  /** Resolves when the worker is connected and taking jobs. */
  async ready(): Promise<void> {
    await this.worker.waitUntilReady();
  }

  /** Stops taking jobs, lets running ones finish, disconnects. Idempotent: the same promise every time. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        // Its jobs are short (they enqueue a turn): past the time, Redis is away and QUIT would wait for it.
        if (!(await closedWithin(this.worker.close(), CLOSE_TIMEOUT_MS))) {
          this.logger.warn(
            { waitedMs: CLOSE_TIMEOUT_MS },
            'the scheduled queue worker did not close in time; dropped',
          );
          await closedWithin(this.worker.disconnect(), CLOSE_TIMEOUT_MS);
        }
      } catch (err) {
        this.logger.warn({ err: describeError(err) }, 'closing the scheduled queue worker failed');
      } finally {
        this.connection.disconnect();
      }
    })();
    return this.closing;
  }
}
