/**
 * The heartbeat and scheduled tasks with their next runs, read from the
 * scheduler's BullMQ queue (`<prefix>:scheduled`): the `heartbeat` job
 * scheduler and the tasks CronStore lists.
 */

import type { OpsReader } from './ports.js';

/** One scheduled task as shown by status and the dashboard. */
export interface TaskView {
  id: string;
  session: string;
  mode: string;
  /** The task's text, cut to 80 characters. */
  message: string;
  /** e.g. "every 1h" or "0 9 * * * (Europe/Lisbon)". */
  schedule: string;
  /** ISO time of the next run, or null when due now / unknown. */
  next: string | null;
}

export interface ScheduleView {
  /** The heartbeat's job scheduler, or null when the heartbeat is off (or no worker set it up yet). */
  heartbeat: { next: string | null; everyMs: number | null } | null;
  tasks: TaskView[];
}

/** Reads the heartbeat scheduler and every task. */
export async function listSchedules(reader: Pick<OpsReader, 'schedules'>): Promise<ScheduleView> {
  const { heartbeat, tasks } = await reader.schedules();
  return {
    heartbeat: heartbeat ? { next: iso(heartbeat.next), everyMs: heartbeat.everyMs ?? null } : null,
    tasks: tasks.map(({ task, nextRun }) => ({
      id: task.id,
      session: task.sessionKey,
      mode: task.mode,
      message: task.message.length > 80 ? `${task.message.slice(0, 79)}…` : task.message,
      schedule: task.schedule.description,
      next: iso(nextRun),
    })),
  };
}

function iso(ms: number | null | undefined): string | null {
  return typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}
