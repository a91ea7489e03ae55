/**
 * The `helpers` queue: one BullMQ job per spawned helper (job id = helper
 * id), so a helper runs beside the chat, in any worker, and is redone if the
 * worker running it dies. Its keys are in keys.ts.
 */
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { AppError, describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import type { HelperJob } from '../messages/helper-job.js';

/** The queue of helper jobs. */
export const HELPERS_QUEUE = 'helpers';

/** Tunables of helper jobs. */
export interface HelperJobTuning {
  /** Tries of a helper whose failure is transient. @defaultValue 3 */
  attempts?: number;
  /** First retry delay, doubled each time. @defaultValue 5000 */
  backoffMs?: number;
}

/** The producer side: the spawn tool enqueues through it. */
/** Implements the spawn tool's `HelperQueue` port (tools/spawn.ts) structurally. */
export class HelpersQueue {
  readonly #queue: Queue;
  readonly #tuning: HelperJobTuning;
  #closing: Promise<void> | undefined;

  /** `bus`: the connection (borrowed) and key prefix, e.g. the Bus. */
  constructor(bus: { redis: Redis; prefix: string }, logger: Logger, tuning: HelperJobTuning = {}) {
    this.#queue = new Queue(HELPERS_QUEUE, { connection: bus.redis, prefix: bus.prefix });
    this.#queue.on('error', (err) => logger.warn({ err: describeError(err) }, 'helpers queue error'));
    this.#tuning = tuning;
  }

  async enqueue(job: HelperJob): Promise<void> {
    try {
      await this.#queue.add('helper', job, {
        jobId: job.id,
        attempts: this.#tuning.attempts ?? 3,
        backoff: { type: 'exponential', delay: this.#tuning.backoffMs ?? 5_000 },
        removeOnComplete: { age: 24 * 3_600 },
        removeOnFail: { age: 7 * 24 * 3_600 },
      });
    } catch (err) {
      throw new AppError('REDIS_UNAVAILABLE', `could not queue helper ${job.id}: ${describeError(err)}`, {
        cause: err,
        transient: true,
      });
    }
  }

  /** Closes the queue (not the bus's connection). Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#queue.close();
    return this.#closing;
  }
}
