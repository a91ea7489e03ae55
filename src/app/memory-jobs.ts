/**
 * The worker's memory upkeep: MEMORY.md's history (a hand edit is noticed at
 * start and by a cheap stat every minute), and the daily consolidation job
 * (its scheduler upserted, or removed when MAGPIE_MEMORY_CONSOLIDATE is
 * empty; the job itself runs in whichever worker takes it).
 */
import { CONSOLIDATE_JOB, type ScheduleTarget, scheduleConsolidation } from '../bus/memory-schedule.js';
import type { ScheduledJob } from '../bus/scheduled-worker.js';
import type { Config } from '../config/index.js';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { Consolidator, describeConsolidation } from '../memory/consolidation/consolidator.js';
import { MemoryHistory } from '../memory/history/history.js';
import type { LLMProvider } from '../providers/types.js';

/** The bus's Redis connection (borrowed) and key prefix, and the rest. */
export interface MemoryJobsOptions extends ScheduleTarget {
  config: Config;
  /** The worker's budgeted provider: consolidation counts against the limits like a turn. */
  provider: LLMProvider;
  logger: Logger;
  /** How often MEMORY.md is looked at for hand edits. @defaultValue 60_000 */
  handEditIntervalMs?: number;
}

/** The running upkeep of one worker. */
export interface MemoryJobs {
  /** Processors for the scheduled queue, by job name. */
  readonly jobs: Readonly<Record<string, (job: ScheduledJob) => Promise<string>>>;
  readonly history: MemoryHistory;
  readonly consolidator: Consolidator;
  /** Stops the hand-edit check. */
  close(): Promise<void>;
}

/** Schedules (or unschedules) consolidation and starts the hand-edit check. */
export async function startMemoryJobs(options: MemoryJobsOptions): Promise<MemoryJobs> {
  const { config, provider } = options;
  const logger = options.logger.child({ component: 'memory' });
  const history = new MemoryHistory({ workspace: config.workspace, logger });
  const consolidator = new Consolidator({ history, provider, logger, maxChars: config.memory.maxChars });
  const changed = await scheduleConsolidation(options, config.memory.consolidateAt, config.timezone);
  if (config.memory.consolidateAt) {
    logger.info(
      { at: config.memory.consolidateAt, timezone: config.timezone },
      'memory consolidation scheduled',
    );
  } else if (changed) {
    logger.info('memory consolidation off (MAGPIE_MEMORY_CONSOLIDATE empty); its schedule removed');
  }
  const notice = () =>
    history.noticeHandEdit().catch((err: unknown) => {
      logger.warn({ err: describeError(err) }, 'memory history: checking MEMORY.md for hand edits failed');
    });
  await notice();
  const timer = setInterval(notice, options.handEditIntervalMs ?? 60_000);
  timer.unref();
  return {
    jobs: { [CONSOLIDATE_JOB]: async () => describeConsolidation(await consolidator.run()) },
    history,
    consolidator,
    close: async () => clearInterval(timer),
  };
}
