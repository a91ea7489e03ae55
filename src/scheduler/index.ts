/**
 * The scheduler: heartbeat and scheduled tasks on the BullMQ `scheduled`
 * queue. `startScheduler` runs in every worker process; job schedulers make
 * sure each tick or occurrence fires once however many workers run.
 */
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import type { StateStore } from '../agent/ports.js';
import type { AgentRunner } from '../agent/types.js';
import type { Config } from '../config/index.js';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { CronTaskSchema, fireTimeOf, JOB_NAMES, openScheduledQueue, SCHEDULED_QUEUE } from './cron-store.js';
import { fireTask } from './fire.js';
import { HeartbeatRunner, type HeartbeatRunnerOptions } from './heartbeat.js';
import type { SchedulerBus } from './ports.js';

export { createCronTool } from '../tools/cron.js';

/** Tunables of the scheduled-queue worker, with their defaults. */
export interface SchedulerTuning {
  /** Scheduled jobs run at once per process (heartbeats never overlap anyway: a Redis lock). @defaultValue 4 */
  concurrency?: number;
  /** Job lock, renewed while the job runs. @defaultValue 30000 */
  lockDurationMs?: number;
  /** How often crashed jobs are looked for. @defaultValue 15000 */
  stalledIntervalMs?: number;
  /** Heartbeat runner settings (lock lifetime, busy wait). */
  heartbeat?: Pick<HeartbeatRunnerOptions, 'lockTtlMs' | 'busyWaitMs' | 'busyPollMs'>;
}

export interface StartSchedulerOptions {
  config: Config;
  bus: SchedulerBus;
  agent: AgentRunner;
  state: StateStore;
  logger: Logger;
  tuning?: SchedulerTuning;
}

/** The running scheduler of one process. */
export interface RunningScheduler {
  /** Stops taking jobs, lets running ones finish, closes its connections. Same promise every time. */
  close(): Promise<void>;
}

/** The id of the heartbeat's job scheduler. */
const HEARTBEAT_SCHEDULER_ID = 'heartbeat';

/**
 * Upserts (or, with interval 0, removes) the heartbeat job scheduler and
 * starts this process's worker for the scheduled queue.
 */
export async function startScheduler(options: StartSchedulerOptions): Promise<RunningScheduler> {
  const { config, bus, tuning = {} } = options;
  const logger = options.logger.child({ component: 'scheduler' });
  const queue = openScheduledQueue(bus.redis, bus.prefix);
  try {
    await syncHeartbeatScheduler(queue, config.heartbeat.intervalMs, logger);
  } finally {
    await queue.close();
  }
  const heartbeat = new HeartbeatRunner({ ...tuning.heartbeat, ...options, logger });
  const connection = bus.createWorkerConnection();
  const worker = new Worker(SCHEDULED_QUEUE, (job: Job) => processJob(job, { bus, heartbeat, logger }), {
    connection,
    prefix: bus.prefix,
    concurrency: tuning.concurrency ?? 4,
    lockDuration: tuning.lockDurationMs ?? 30_000,
    stalledInterval: tuning.stalledIntervalMs ?? 15_000,
  });
  worker.on('failed', (job, err) =>
    logger.warn({ job: job?.id, err: describeError(err) }, 'scheduled job failed'),
  );
  worker.on('error', (err) => logger.warn({ err: describeError(err) }, 'scheduled queue worker error'));
  await worker.waitUntilReady();
  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= (async () => {
        try {
          await worker.close();
        } catch (err) {
          logger.warn({ err: describeError(err) }, 'closing the scheduled queue worker failed');
        } finally {
          connection.disconnect();
        }
      })();
      return closing;
    },
  };
}

async function syncHeartbeatScheduler(
  queue: ReturnType<typeof openScheduledQueue>,
  intervalMs: number,
  logger: Logger,
): Promise<void> {
  if (intervalMs <= 0) {
    const removed = await queue.removeJobScheduler(HEARTBEAT_SCHEDULER_ID);
    logger.info({ removed }, 'heartbeat off (MAGPIE_HEARTBEAT_INTERVAL=0)');
    return;
  }
  await queue.upsertJobScheduler(
    HEARTBEAT_SCHEDULER_ID,
    // startDate only counts when the scheduler is new (or its interval changed): the first tick
    // comes one interval after start-up, and a restarting worker keeps the planned tick.
    { every: intervalMs, startDate: Date.now() + intervalMs },
    {
      name: JOB_NAMES.heartbeat,
      data: {},
      opts: { attempts: 1, removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } },
    },
  );
  logger.info({ intervalMs }, 'heartbeat scheduled');
}

async function processJob(
  job: Job,
  deps: { bus: SchedulerBus; heartbeat: HeartbeatRunner; logger: Logger },
): Promise<string> {
  const jobId = job.id ?? '';
  if (job.name === JOB_NAMES.heartbeat) return deps.heartbeat.run(jobId);
  if (job.name === JOB_NAMES.once || job.name === JOB_NAMES.recurring) {
    const parsed = CronTaskSchema.safeParse(job.data);
    if (!parsed.success) {
      deps.logger.error(
        { job: jobId, issue: parsed.error.issues[0]?.message },
        'malformed scheduled task; dropped',
      );
      throw new UnrecoverableError('malformed scheduled task');
    }
    return fireTask(parsed.data, fireTimeOf(jobId, parsed.data, job.timestamp), deps);
  }
  deps.logger.warn({ job: jobId, name: job.name }, 'unknown scheduled job; ignored');
  return 'ignored';
}
