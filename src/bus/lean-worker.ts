/**
 * BullMQ's Worker without the two fetches per job that find nothing when jobs
 * come one at a time (issue 29: 4 of a turn's 6 moveToActive calls were empty).
 *
 * BullMQ's moveToActive script re-adds the queue's wake-up marker whenever it
 * takes a job, so the worker's next blocking read (BZPOPMIN) returns at once
 * and asks again. On top of that a Worker with concurrency > 1 asks once more
 * straight after taking a job, and moveToFinished asks once more while
 * completing it, although a blocking read is already waiting. This subclass:
 *
 * - after taking a job, waits on the marker instead of asking at once: the
 *   marker the take re-added wakes it, so a second waiting job is still taken
 *   immediately (one BZPOPMIN round trip later), and nothing is missed;
 * - lets moveToFinished fetch the next job only when no blocking read is
 *   waiting (all slots were busy: then it saves a round trip, as BullMQ meant).
 *
 * Both touch two private fields of BullMQ's Worker (`drained`, `waiting`);
 * test/integration/bus/lean-worker.test.ts counts the fetches, so an upgrade
 * that renames them fails there rather than silently costing commands again.
 */
import { type Job, type Processor, Worker, type WorkerOptions } from 'bullmq';

/** The Worker's private fields this class reads or sets. */
interface WorkerInternals {
  drained: boolean;
  waiting: Promise<number> | null;
}

export class LeanWorker<Data = unknown, Result = unknown> extends Worker<Data, Result> {
  /** A job was taken since the last empty fetch: the next empty one is the queue's drain. */
  #tookJob = false;

  constructor(name: string, processor: Processor<Data, Result>, options: WorkerOptions) {
    super(name, processor, options);
  }

  private get internals(): WorkerInternals {
    return this as unknown as WorkerInternals;
  }

  protected override async nextJobFromJobData(
    ...args: Parameters<Worker<Data, Result>['nextJobFromJobData']>
  ): Promise<Job<Data, Result>> {
    const job = await super.nextJobFromJobData(...args);
    if (job) {
      // The next fetch blocks on the marker (re-added by the take) rather than asking at once.
      this.internals.drained = true;
      this.#tookJob = true;
    } else if (this.#tookJob) {
      // BullMQ saw `drained` already set above, so it did not emit: the queue did drain.
      this.#tookJob = false;
      this.emit('drained');
    }
    return job;
  }

  override processJob(
    job: Job<Data, Result>,
    token: string,
    fetchNextCallback: () => boolean = () => true,
  ): ReturnType<Worker<Data, Result>['processJob']> {
    return super.processJob(job, token, () => fetchNextCallback() && this.internals.waiting === null);
  }
}
