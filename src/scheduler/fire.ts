/**
 * Firing a scheduled task. `remind` sends the text to the origin chat as is;
 * `agent` queues it as a message of the origin chat's session, so it runs in
 * order with that chat's turns. Ids are derived from the task and the planned
 * time of the occurrence, so a redone job never fires twice.
 */

import type { UnattendedBudget } from '../budget/ports.js';
import type { CronTask } from '../bus/cron-store.js';
import { schedulerKeys } from '../bus/keys.js';
import type { Logger } from '../log/index.js';
import type { SchedulerBus } from './ports.js';

/** How long the "already fired" marker of an agent-mode occurrence is kept. */
const FIRED_MARKER_TTL_SECONDS = 7 * 24 * 3_600;

/** The deterministic id of one occurrence of a task. */
export function occurrenceId(task: CronTask, fireTime: number): string {
  return `cron-${task.id}-${fireTime}`;
}

/** The content of an agent-mode turn: the task, framed so the model knows it is scheduled. */
export function scheduledTaskContent(task: CronTask): string {
  return `[scheduled task ${task.id}, ${task.schedule.description}] ${task.message}`;
}

/**
 * Fires one occurrence. Reminders rely on the outbound queue ignoring a job id
 * it already holds. Agent turns go through the mailbox, which does not
 * deduplicate, so a Redis marker (SET NX) is taken first and given back if
 * publishing fails; only a crash between the two can lose an occurrence.
 */
export async function fireTask(
  task: CronTask,
  fireTime: number,
  deps: { bus: SchedulerBus; logger: Logger; budget?: UnattendedBudget | undefined },
): Promise<'sent' | 'already-fired' | 'skipped-budget'> {
  const id = occurrenceId(task, fireTime);
  const target = {
    channel: task.channel,
    chatId: task.chatId,
    ...(task.threadId ? { threadId: task.threadId } : {}),
  };
  const log = deps.logger.child({
    task: task.id,
    occurrence: id,
    channel: task.channel,
    chatId: task.chatId,
  });
  if (task.mode === 'remind') {
    await deps.bus.publishOutbound({
      id,
      ...target,
      content: `⏰ ${task.message}`,
      kind: 'message',
      metadata: { cron: task.id },
    });
    log.info('scheduled reminder sent');
    return 'sent';
  }
  // At a spending limit the occurrence is skipped, not queued to fire with the others after the reset.
  if (await deps.budget?.blocked(task.sessionKey)) {
    log.warn('scheduled agent turn skipped: a spending limit is reached');
    await deps.budget?.skipped('cron');
    return 'skipped-budget';
  }
  const marker = schedulerKeys.fired(deps.bus.prefix, id);
  if (!(await deps.bus.markers.claim(marker, FIRED_MARKER_TTL_SECONDS))) {
    log.info('scheduled agent turn already queued; not queueing it again');
    return 'already-fired';
  }
  try {
    await deps.bus.publishInbound({
      id,
      ...target,
      sessionKey: task.sessionKey,
      senderId: 'cron',
      senderName: 'scheduled task',
      content: scheduledTaskContent(task),
      metadata: { cron: task.id },
    });
  } catch (err) {
    await deps.bus.markers.clear(marker).catch((delErr: unknown) => {
      log.warn({ err: delErr }, 'could not clear the fired marker; this occurrence will not be retried');
    });
    throw err;
  }
  log.info('scheduled agent turn queued');
  return 'sent';
}
