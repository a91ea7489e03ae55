/**
 * The scheduler: heartbeat and scheduled tasks on the BullMQ `scheduled`
 * queue. `startScheduler` runs in every worker process; job schedulers make
 * sure each tick or occurrence fires once however many workers run.
 */
import type { StateStore } from '../agent/ports.js';
import type { AgentRunner } from '../agent/types.js';
import type { UnattendedBudget } from '../budget/ports.js';
import { type CronStore, CronTaskSchema, fireTimeOf, JOB_NAMES } from '../bus/cron-store.js';
import { type ScheduledJob, ScheduledWorker } from '../bus/scheduled-worker.js';
import type { Config } from '../config/index.js';
import { AppError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
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
  /** The scheduled queue's store (borrowed: the caller closes it); the heartbeat's schedule is kept there. */
  store: Pick<CronStore, 'scheduleHeartbeat'>;
  tuning?: SchedulerTuning;
  /** Heartbeat ticks and scheduled agent turns are skipped at a spending limit. @defaultValue none */
  budget?: UnattendedBudget;
  /** Processors of further jobs on the scheduled queue, by job name (memory consolidation). @defaultValue none */
  jobs?: Readonly<Record<string, (job: ScheduledJob) => Promise<string>>>;
}

/** The running scheduler of one process. */
export interface RunningScheduler {
  /** Stops taking jobs, lets running ones finish, closes its connections. Same promise every time. */
  close(): Promise<void>;
}

/**
 * Upserts (or, with interval 0, removes) the heartbeat job scheduler and
 * starts this process's worker for the scheduled queue.
 */
export async function startScheduler(options: StartSchedulerOptions): Promise<RunningScheduler> {
  const { config, bus, tuning = {} } = options;
  const logger = options.logger.child({ component: 'scheduler' });
  const intervalMs = config.heartbeat.intervalMs;
  const changed = await options.store.scheduleHeartbeat(intervalMs);
  if (intervalMs <= 0) logger.info({ removed: changed }, 'heartbeat off (MAGPIE_HEARTBEAT_INTERVAL=0)');
  else logger.info({ intervalMs }, 'heartbeat scheduled');
  const heartbeat = new HeartbeatRunner({ ...tuning.heartbeat, ...options, logger });
  const worker = new ScheduledWorker({
    connection: bus.createConsumerConnection(),
    prefix: bus.prefix,
    processor: (job) =>
      (options.jobs && Object.hasOwn(options.jobs, job.name) ? options.jobs[job.name]?.(job) : undefined) ??
      processJob(job, { bus, heartbeat, logger, budget: options.budget }),
    logger,
    concurrency: tuning.concurrency,
    lockDurationMs: tuning.lockDurationMs,
    stalledIntervalMs: tuning.stalledIntervalMs,
  });
  await worker.ready();
  return { close: () => worker.close() };
}

async function processJob(
  job: ScheduledJob,
  deps: {
    bus: SchedulerBus;
    heartbeat: HeartbeatRunner;
    logger: Logger;
    budget: UnattendedBudget | undefined;
  },
): Promise<string> {
  const jobId = job.id;
  if (job.name === JOB_NAMES.heartbeat) return deps.heartbeat.run(jobId);
  if (job.name === JOB_NAMES.once || job.name === JOB_NAMES.recurring) {
    const parsed = CronTaskSchema.safeParse(job.data);
    if (!parsed.success) {
      deps.logger.error(
        { job: jobId, issue: parsed.error.issues[0]?.message },
        'malformed scheduled task; dropped',
      );
      throw new AppError('INVALID_MESSAGE', 'malformed scheduled task');
    }
    return fireTask(parsed.data, fireTimeOf(jobId, parsed.data, job.timestamp), deps);
  }
  deps.logger.warn({ job: jobId, name: job.name }, 'unknown scheduled job; ignored');
  return 'ignored';
}
