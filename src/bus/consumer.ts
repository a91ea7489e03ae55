/**
 * A queue consumer: a BullMQ Worker behind our own small types, so nothing
 * outside `bus/` imports bullmq. A processor's AppError that is not transient
 * fails the job at once (moved aside, not retried); anything else is retried
 * with the job's backoff.
 */
import { DelayedError, type Job, UnrecoverableError, type Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { AppError, describeError } from '../errors/index.js';
import { positiveWholeNumber } from '../errors/option-checks.js';
import type { Logger } from '../log/index.js';
import { CLOSE_TIMEOUT_MS, closedWithin } from './bounded-close.js';
import { LeanWorker } from './lean-worker.js';

/**
 * How long BullMQ's close may take once no job of this consumer runs. On a healthy Redis it
 * takes milliseconds; after failovers of a Redis Cluster its fetch loop could sit on a command
 * for minutes, and every idle consumer of a stopping worker waited out its whole shutdown time-out.
 */
const IDLE_CLOSE_GRACE_MS = 2_000;

/** The job a processor receives. */
export interface ConsumedJob {
  id: string;
  /** Raw payload: validate it before use. */
  data: unknown;
  /** Attempts already made before this one. */
  attemptsMade: number;
  /** Total attempts allowed. */
  maxAttempts: number;
  /**
   * Puts the job back for `delayMs` (BullMQ's delayed set; promoting it ends
   * the wait early) without spending an attempt. The processor must return
   * right after: the job is no longer its own, and what it returns is ignored.
   */
  postpone(delayMs: number): Promise<void>;
}

export type JobProcessor = (job: ConsumedJob) => Promise<void>;

/** Tunables of a consumer, with their defaults. */
export interface ConsumerTuning {
  /** Jobs processed at once. @defaultValue 1 */
  concurrency?: number;
  /**
   * How long a job's lock lasts; renewed automatically every half while the
   * job runs, so only a dead process loses it. @defaultValue 30000
   */
  lockDurationMs?: number;
  /** How often expired locks are looked for. A crashed job is redone within lock + interval. @defaultValue 15000 */
  stalledIntervalMs?: number;
  /** Stalls after which a job fails instead of being redone (a job that kills its worker). @defaultValue 2 */
  maxStalledCount?: number;
  /** How long `close()` waits for running jobs before giving up on them. @defaultValue 60000 */
  shutdownTimeoutMs?: number;
}

export interface ConsumerOptions extends ConsumerTuning {
  queue: string;
  prefix: string;
  /** A worker connection (`maxRetriesPerRequest: null`); closed with the consumer. */
  connection: Redis;
  processor: JobProcessor;
  logger: Logger;
}

export class Consumer {
  /** Stalls (or hand-backs, bus/dead-holders.ts) after which a job fails instead of being redone. */
  readonly maxStalledCount: number;
  private readonly worker: Worker;
  private readonly connection: Redis;
  private readonly logger: Logger;
  private readonly shutdownTimeoutMs: number;
  private closing: Promise<void> | undefined;
  /** Processor calls running now, and who waits for there to be none. */
  #running = 0;
  #idleWaiters: Array<() => void> = [];

  constructor(options: ConsumerOptions) {
    const concurrency = positiveWholeNumber('consumer concurrency', options.concurrency ?? 1);
    this.connection = options.connection;
    this.logger = options.logger.child({ queue: options.queue });
    this.shutdownTimeoutMs = options.shutdownTimeoutMs ?? 60_000;
    const processor = options.processor;
    this.maxStalledCount = options.maxStalledCount ?? 2;
    this.worker = new LeanWorker(
      options.queue,
      async (job: Job, token?: string) => {
        let postponed = false;
        this.#running += 1;
        try {
          await processor({
            id: job.id ?? '',
            data: job.data,
            attemptsMade: job.attemptsMade,
            maxAttempts: job.opts.attempts ?? 1,
            postpone: async (delayMs) => {
              await job.moveToDelayed(Date.now() + delayMs, token);
              postponed = true;
            },
          });
        } catch (err) {
          if (!postponed) {
            if (err instanceof AppError && !err.transient) throw new UnrecoverableError(describeError(err));
            throw err;
          }
          this.logger.warn(
            { job: job.id, err: describeError(err) },
            'postponed job: its processor failed after',
          );
        } finally {
          this.#running -= 1;
          if (this.#running === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
        }
        // BullMQ's word for a job its processor moved: neither completed nor failed.
        if (postponed) throw new DelayedError();
      },
      {
        connection: options.connection,
        prefix: options.prefix,
        concurrency,
        lockDuration: options.lockDurationMs ?? 30_000,
        stalledInterval: options.stalledIntervalMs ?? 15_000,
        maxStalledCount: this.maxStalledCount,
      },
    );
    // BullMQ emits `failed` for every failed attempt; `finishedOn` is set only when no retry follows.
    this.worker.on('failed', (job, err) => {
      const fields = { job: job?.id, attemptsMade: job?.attemptsMade, err: describeError(err) };
      if (job?.finishedOn === undefined) this.logger.info(fields, 'job attempt failed; retried');
      else this.logger.warn(fields, 'job failed');
    });
    this.worker.on('error', (err) => {
      this.logger.warn({ err: describeError(err) }, 'queue worker error');
    });
  }

  /** The BullMQ worker's id, the first part of each lock token it writes. */
  get workerId(): string {
    return this.worker.id;
  }

  /**
   * Calls `listener` when the queue has no waiting job left (BullMQ's
   * `drained`); jobs in flight may still run. Returns the unsubscribe.
   */
  onDrained(listener: () => void): () => void {
    this.worker.on('drained', listener);
    return () => {
      this.worker.off('drained', listener);
    };
  }

  /** Resolves when the consumer is connected and taking jobs. */
  async ready(): Promise<void> {
    await this.worker.waitUntilReady();
  }

  /**
   * Stops taking jobs, waits up to `shutdownTimeoutMs` for running ones, then
   * closes the connection. Idempotent: the same promise every time.
   */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  /** Resolves once no processor call is running. */
  #idle(): Promise<void> {
    if (this.#running === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  private async doClose(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), this.shutdownTimeoutMs);
    });
    try {
      let closed = false;
      const closing = this.worker.close().then(() => {
        closed = true;
      });
      // No job running for the whole grace (one taken while BullMQ closed starts the wait again).
      const idleThrough = async (): Promise<'idle'> => {
        for (;;) {
          await this.#idle();
          await closedWithin(closing, IDLE_CLOSE_GRACE_MS);
          if (closed || this.#running === 0) return 'idle';
        }
      };
      const outcome = await Promise.race([
        closing.then(() => 'closed' as const),
        timedOut.then(() => 'late' as const),
        idleThrough(),
      ]);
      if (outcome === 'late') {
        this.logger.warn(
          { waitedMs: this.shutdownTimeoutMs },
          'running jobs did not finish in time; they will be redone',
        );
      } else if (outcome === 'idle' && !closed) {
        this.logger.info(
          { waitedMs: IDLE_CLOSE_GRACE_MS },
          "the queue worker's close waited with no job running; its connections are dropped",
        );
      }
      // BullMQ's close is still waiting (for the jobs, its fetch loop, or QUIT for an absent Redis): drop its connections too.
      if (!closed) await closedWithin(this.worker.disconnect(), CLOSE_TIMEOUT_MS);
    } catch (err) {
      this.logger.warn({ err: describeError(err) }, 'closing the queue worker failed');
    } finally {
      clearTimeout(timer);
      this.connection.disconnect();
    }
  }
}
