/**
 * Scheduled tasks stored in BullMQ on the `scheduled` queue: recurring tasks
 * are job schedulers (`cron-<id>`), one-shot tasks are delayed jobs (job id
 * `cron-<id>`, removed once done). Each job carries the whole task, so a
 * worker that fires it needs nothing else. The heartbeat's job scheduler
 * lives on the same queue. The jobs are run by scheduled-worker.ts.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Job, type JobsOptions, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { nextRun } from '../time/schedule.js';
import { CLOSE_TIMEOUT_MS, closedWithin } from './bounded-close.js';
import { keys } from './keys.js';

/** The queue of heartbeat and scheduled-task jobs. */
export const SCHEDULED_QUEUE = 'scheduled';
/** Job names on the scheduled queue. */
export const JOB_NAMES = { heartbeat: 'heartbeat', once: 'cron-once', recurring: 'cron-recurring' } as const;

const ScheduleSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('once'), runAt: z.number(), tz: z.string(), description: z.string() }),
  z.object({
    kind: z.literal('every'),
    everyMs: z.number().int().positive(),
    tz: z.string(),
    description: z.string(),
  }),
  z.object({ kind: z.literal('cron'), pattern: z.string(), tz: z.string(), description: z.string() }),
]);

/** A scheduled task as stored in its job (validated when fired or listed). */
export const CronTaskSchema = z.object({
  id: z.string().regex(/^[a-z0-9]+$/),
  channel: z.string().min(1),
  chatId: z.string().min(1),
  threadId: z.string().min(1).optional(),
  sessionKey: z.string().min(1),
  message: z.string().min(1),
  mode: z.enum(['remind', 'agent']),
  schedule: ScheduleSchema,
  createdAt: z.string(),
});
export type CronTask = z.infer<typeof CronTaskSchema>;

/** The mode as listings show it: an agent-mode task is marked, since each run is a full turn with tools. */
export function modeLabel(mode: CronTask['mode']): string {
  return mode === 'agent' ? 'AGENT (full turn with tools)' : mode;
}

/** A task with its next run (undefined when due now or no longer scheduled). */
export interface ListedTask {
  task: CronTask;
  nextRun: number | undefined;
}

/** The BullMQ id of a task's scheduler or one-shot job. */
export function taskJobId(taskId: string): string {
  return `cron-${taskId}`;
}

/** The id of the heartbeat's job scheduler. */
const HEARTBEAT_SCHEDULER_ID = 'heartbeat';

/** The heartbeat's job scheduler as stored. */
export interface HeartbeatSchedule {
  /** When the next tick is planned (ms since the epoch), if known. */
  next: number | undefined;
  /** Its interval, if known. */
  everyMs: number | undefined;
}

const ONE_SHOT_OPTIONS: JobsOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 1_000 },
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3_600 },
};

/** How many tasks one chat (session) may hold; see Config['cron']. */
export interface CronLimits {
  /** Tasks of any kind. */
  maxPerChat: number;
  /** Agent-mode tasks. */
  maxAgentPerChat: number;
}

/** What addWithinLimits did: the task's first run, or the one line saying why it was refused. */
export type AddResult = { added: true; nextRun: number | undefined } | { added: false; reason: string };

/** How long one add may hold a chat's lock (it is released as soon as the add is done). */
const ADD_LOCK_MS = 10_000;
/** How long an add waits for another add of the same chat before giving up. */
const ADD_WAIT_MS = 15_000;
const RELEASE_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

export interface CronStoreOptions {
  /** A Redis connection the store borrows (not closed by it). */
  connection: Redis;
  /** The BullMQ prefix (config.redis.prefix). */
  prefix: string;
}

/** Adds, lists and removes scheduled tasks, and keeps the heartbeat's schedule. */
export class CronStore {
  private readonly queue: Queue;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: CronStoreOptions) {
    this.queue = new Queue(SCHEDULED_QUEUE, { connection: options.connection, prefix: options.prefix });
    // A Queue re-emits its borrowed connection's errors (a failover's ECONNREFUSED); without a listener
    // BullMQ prints each to stderr. Every failure also rejects the command that met it, handled there.
    this.queue.on('error', () => undefined);
  }

  /**
   * Stores a task unless its chat already holds `maxPerChat` tasks, or
   * `maxAgentPerChat` agent-mode ones for an agent-mode task. Adds of one chat
   * are serialised by a lock in Redis (`<prefix>:cron-add:<session>`, SET NX
   * with a lifetime), so two concurrent adds at the limit — in one worker or
   * two — cannot both pass the count.
   */
  async addWithinLimits(task: CronTask, limits: CronLimits, now = Date.now()): Promise<AddResult> {
    const { connection, prefix } = this.options;
    const key = keys.cronAdd(prefix, task.sessionKey);
    const token = randomUUID();
    const deadline = Date.now() + ADD_WAIT_MS;
    while ((await connection.set(key, token, 'PX', ADD_LOCK_MS, 'NX')) !== 'OK') {
      if (Date.now() > deadline) {
        return { added: false, reason: 'another schedule change in this chat is still running; try again' };
      }
      await sleep(20);
    }
    try {
      const tasks = (await this.list({ sessionKey: task.sessionKey })).map((t) => t.task);
      const refusal = limitRefusal(tasks, task, limits);
      if (refusal) return { added: false, reason: refusal };
      return { added: true, nextRun: await this.add(task, now) };
    } finally {
      await connection.eval(RELEASE_SCRIPT, 1, key, token);
    }
  }

  /**
   * Upserts the heartbeat's job scheduler (first tick one interval from now;
   * an unchanged interval keeps the planned tick), or with `intervalMs` 0
   * removes it. True when a scheduler was upserted or removed.
   */
  async scheduleHeartbeat(intervalMs: number): Promise<boolean> {
    if (intervalMs <= 0) return this.queue.removeJobScheduler(HEARTBEAT_SCHEDULER_ID);
    await this.queue.upsertJobScheduler(
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
    return true;
  }

  /** The heartbeat's job scheduler, or undefined when the heartbeat is off (or no worker set it up yet). */
  async heartbeatSchedule(): Promise<HeartbeatSchedule | undefined> {
    const stored = await this.queue.getJobScheduler(HEARTBEAT_SCHEDULER_ID);
    if (!stored) return undefined;
    return { next: stored.next ?? undefined, everyMs: stored.every ? Number(stored.every) : undefined };
  }

  /** Stores a task, without counting the chat's tasks (the cron tool uses addWithinLimits); returns its first run. */
  async add(task: CronTask, now = Date.now()): Promise<number | undefined> {
    const jobId = taskJobId(task.id);
    const schedule = task.schedule;
    if (schedule.kind === 'once') {
      await this.queue.add(JOB_NAMES.once, task, {
        ...ONE_SHOT_OPTIONS,
        jobId,
        delay: Math.max(0, schedule.runAt - now),
      });
      return schedule.runAt;
    }
    // An `every` scheduler would fire at once; its first run is one interval from now instead.
    const repeat =
      schedule.kind === 'every'
        ? { every: schedule.everyMs, startDate: now + schedule.everyMs }
        : { pattern: schedule.pattern, tz: schedule.tz };
    await this.queue.upsertJobScheduler(jobId, repeat, {
      name: JOB_NAMES.recurring,
      data: task,
      opts: { attempts: 5, backoff: { type: 'exponential', delay: 1_000 }, removeOnComplete: true },
    });
    const stored = await this.queue.getJobScheduler(jobId);
    return stored?.next ?? nextRun(schedule, now);
  }

  /** Every task, or only those of one session, soonest first. */
  async list(filter: { sessionKey?: string } = {}): Promise<ListedTask[]> {
    const out: ListedTask[] = [];
    for (const scheduler of await this.queue.getJobSchedulers(0, -1, true)) {
      if (!scheduler.key.startsWith('cron-')) continue;
      const task = CronTaskSchema.safeParse(scheduler.template?.data);
      if (!task.success) continue;
      out.push({ task: task.data, nextRun: scheduler.next ?? undefined });
    }
    const jobs: Job[] = await this.queue.getJobs(['delayed', 'waiting', 'prioritized', 'active']);
    for (const job of jobs) {
      if (job.name !== JOB_NAMES.once) continue;
      const task = CronTaskSchema.safeParse(job.data);
      if (!task.success || task.data.schedule.kind !== 'once') continue;
      out.push({ task: task.data, nextRun: task.data.schedule.runAt });
    }
    return out
      .filter((t) => filter.sessionKey === undefined || t.task.sessionKey === filter.sessionKey)
      .sort((a, b) => (a.nextRun ?? 0) - (b.nextRun ?? 0));
  }

  /** One task by id (any session), or undefined. */
  async get(taskId: string): Promise<ListedTask | undefined> {
    return (await this.list()).find((t) => t.task.id === taskId);
  }

  /**
   * Removes a task. With `sessionKey`, only a task of that session is
   * removed (another chat's task counts as not found). True when removed.
   */
  async remove(taskId: string, filter: { sessionKey?: string } = {}): Promise<boolean> {
    const found = await this.get(taskId);
    if (!found) return false;
    if (filter.sessionKey !== undefined && found.task.sessionKey !== filter.sessionKey) return false;
    const jobId = taskJobId(taskId);
    if (found.task.schedule.kind === 'once') return (await this.queue.remove(jobId)) === 1;
    return this.queue.removeJobScheduler(jobId);
  }

  /** Closes the queue (not the borrowed connection). Idempotent: the same promise every time. */
  close(): Promise<void> {
    // Bounded: a Queue's close waits for its connection, which waits for Redis (bounded-close.ts).
    this.closing ??= closedWithin(this.queue.close(), CLOSE_TIMEOUT_MS).then(() => undefined);
    return this.closing;
  }
}

/** Why `task` may not join the chat's `existing` tasks under `limits`, or undefined when it may. */
export function limitRefusal(existing: CronTask[], task: CronTask, limits: CronLimits): string | undefined {
  if (existing.length >= limits.maxPerChat) {
    return (
      `this chat already has ${existing.length} scheduled tasks, the most allowed ` +
      `(MAGPIE_CRON_MAX_PER_CHAT=${limits.maxPerChat}); remove one first (action list, then remove)`
    );
  }
  const agents = existing.filter((t) => t.mode === 'agent').length;
  if (task.mode === 'agent' && agents >= limits.maxAgentPerChat) {
    return (
      `this chat already has ${agents} agent-mode tasks, the most allowed ` +
      `(MAGPIE_CRON_MAX_AGENT_PER_CHAT=${limits.maxAgentPerChat}); use mode remind, or remove one first`
    );
  }
  return undefined;
}

/** A short random task id: lowercase letters and digits, no `:`. */
export function newTaskId(): string {
  return crypto.randomUUID().replace(/-/g, '').slice(0, 10);
}

/** The instant a fired job stands for: a scheduler job's planned time, or the one-shot's runAt. */
export function fireTimeOf(jobId: string, task: CronTask, fallback: number): number {
  if (task.schedule.kind === 'once') return task.schedule.runAt;
  const planned = Number(jobId.split(':').pop());
  return Number.isFinite(planned) && planned > 0 ? planned : fallback;
}
