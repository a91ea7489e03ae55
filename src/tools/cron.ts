/**
 * cron: reminders and scheduled agent turns for the current chat. `add`
 * takes exactly one of `at`, `in_seconds`, `every_seconds` or `cron` (+ `tz`);
 * `list` and `remove` see only this chat's tasks. Tasks live in BullMQ
 * (bus/cron-store.ts) and fire once per occurrence in this chat. A chat holds
 * at most config.cron.maxPerChat tasks and maxAgentPerChat agent-mode ones; an
 * agent-mode task (a full turn with tools each run) runs at most once per
 * minAgentIntervalMs, and adding one is announced in the chat.
 */
import { z } from 'zod';
import { type CronStore, type CronTask, type ListedTask, modeLabel, newTaskId } from '../bus/cron-store.js';
import { type Config, formatDuration } from '../config/index.js';
import { describeError } from '../errors/index.js';
import { isInternalChannel } from '../messages/messages.js';
import { formatInZone, parseSchedule, shortestGapMs } from '../time/schedule.js';
import { fail, ok, type Tool, type ToolContext } from './types.js';

const parameters = z.object({
  action: z
    .enum(['add', 'list', 'remove'])
    .describe("add a task, list this chat's tasks, or remove one by id"),
  message: z
    .string()
    .optional()
    .describe('add: the reminder text (mode remind) or the instruction to carry out then (mode agent)'),
  mode: z
    .enum(['remind', 'agent'])
    .optional()
    .describe(
      'add: remind = send the message as is (default); agent = run an agent turn with it in this chat',
    ),
  at: z
    .string()
    .optional()
    .describe(
      'add, one-shot: ISO date-time, e.g. 2026-12-01T09:00 (wall clock in tz unless it has an offset)',
    ),
  in_seconds: z.number().optional().describe('add, one-shot: seconds from now'),
  every_seconds: z.number().int().optional().describe('add, recurring: interval in seconds (at least 60)'),
  cron: z
    .string()
    .optional()
    .describe('add, recurring: 5-field cron expression in tz, e.g. "0 8 * * 1-5" for weekdays at 08:00'),
  tz: z
    .string()
    .optional()
    .describe('IANA time zone for at/cron, e.g. Europe/Lisbon; default the configured zone'),
  id: z.string().optional().describe('remove: the task id shown by add or list'),
});

/** Where the tool keeps tasks: the worker's one CronStore (the tool never closes it). */
export type CronTaskStore = Pick<CronStore, 'addWithinLimits' | 'list' | 'remove'>;

export interface CronToolOptions {
  store: CronTaskStore;
  config: Config;
  /** The shortest allowed every_seconds. @defaultValue 60 */
  minEverySeconds?: number;
  /** The clock. @defaultValue Date.now */
  now?: () => number;
}

/** One line per task, for the tool and the CLI. */
export function describeTask({ task, nextRun }: ListedTask, withChat = false): string {
  const next = nextRun === undefined ? 'due now' : formatInZone(nextRun, task.schedule.tz);
  const chat = withChat ? ` · chat ${task.sessionKey}` : '';
  return `${task.id}${chat} · ${task.schedule.description} · next run: ${next} · ${modeLabel(task.mode)} · "${task.message}"`;
}

/** The cron tool, on the store it is given. */
export function createCronTool(options: CronToolOptions): Tool<typeof parameters> {
  const now = options.now ?? Date.now;
  const { store } = options;
  return {
    name: 'cron',
    description:
      'Schedule reminders and recurring tasks for this chat. action add: give message, mode (remind|agent) and ' +
      'exactly one of at / in_seconds / every_seconds / cron, plus tz if the user is not in the default zone. ' +
      "action list: this chat's tasks. action remove: id. " +
      `Limits per chat: ${options.config.cron.maxPerChat} tasks, ${options.config.cron.maxAgentPerChat} of them ` +
      `mode agent, each run at most every ${formatDuration(options.config.cron.minAgentIntervalMs)}.`,
    parameters,
    async execute(args, ctx) {
      try {
        if (args.action === 'list') {
          const tasks = await store.list({ sessionKey: ctx.sessionKey });
          if (tasks.length === 0) return ok('No scheduled tasks in this chat.');
          return ok(`Scheduled tasks in this chat:\n${tasks.map((t) => `- ${describeTask(t)}`).join('\n')}`);
        }
        if (args.action === 'remove') {
          const id = args.id?.trim();
          if (!id) return fail('remove needs the id of the task (see action list)');
          const removed = await store.remove(id, { sessionKey: ctx.sessionKey });
          return removed
            ? ok(`Removed scheduled task ${id}.`)
            : fail(`no scheduled task "${id}" in this chat; use action list to see this chat's tasks`);
        }
        if (isInternalChannel(ctx.channel)) {
          return fail(
            'scheduled tasks belong to a user chat, and this turn has none; answer the user instead',
          );
        }
        const message = args.message?.trim();
        if (!message) return fail('add needs a message: the reminder text or the instruction for later');
        const at = now();
        const parsed = parseSchedule(args, {
          defaultTz: options.config.timezone,
          now: at,
          ...(options.minEverySeconds === undefined ? {} : { minEverySeconds: options.minEverySeconds }),
        });
        if (!parsed.ok) return fail(parsed.error);
        const mode = args.mode ?? 'remind';
        const limits = options.config.cron;
        const gap = shortestGapMs(parsed.schedule, at);
        if (mode === 'agent' && gap !== undefined && gap < limits.minAgentIntervalMs) {
          return fail(
            `an agent-mode task may run at most once every ${formatDuration(limits.minAgentIntervalMs)} ` +
              `(MAGPIE_CRON_MIN_INTERVAL), and this schedule runs every ${formatDuration(gap)}; ` +
              'choose a longer interval, or mode remind',
          );
        }
        const task: CronTask = {
          id: newTaskId(),
          channel: ctx.channel,
          chatId: ctx.chatId,
          ...(ctx.threadId ? { threadId: ctx.threadId } : {}),
          sessionKey: ctx.sessionKey,
          message,
          mode,
          schedule: parsed.schedule,
          createdAt: new Date(at).toISOString(),
        };
        const added = await store.addWithinLimits(task, limits, at);
        if (!added.added) return fail(added.reason);
        const nextText =
          added.nextRun === undefined ? 'due now' : formatInZone(added.nextRun, task.schedule.tz);
        if (mode === 'agent') await announce(task, nextText, ctx);
        return ok(
          `Scheduled ${mode === 'remind' ? 'reminder' : 'agent task'} ${task.id} (${task.schedule.description}): ` +
            `"${message}"; next run: ${nextText}.`,
        );
      } catch (err) {
        ctx.logger.warn({ err: describeError(err), action: args.action }, 'cron tool failed');
        return fail(`the schedule store is unavailable (${describeError(err)}); try again later`);
      }
    },
  };
}

/**
 * Tells the chat that an agent-mode task was added: each run is a full turn
 * with tools, so the owner should know it exists and how to remove it. A
 * failed notice is logged; the task stays.
 */
async function announce(task: CronTask, nextText: string, ctx: ToolContext): Promise<void> {
  const content =
    `Scheduled an agent task (${task.id}): "${task.message}". It will run a full turn with tools ` +
    `${{ once: 'once', every: '', cron: 'on the schedule ' }[task.schedule.kind]}` +
    `${task.schedule.kind === 'once' ? '' : task.schedule.description}, next at ${nextText}. ` +
    `Remove it by asking me to remove task ${task.id}, or with: magpie cron remove ${task.id}`;
  try {
    await ctx.send({
      channel: ctx.channel,
      chatId: ctx.chatId,
      ...(ctx.threadId !== undefined ? { threadId: ctx.threadId } : {}),
      content,
      kind: 'message',
    });
  } catch (err) {
    ctx.logger.warn({ err: describeError(err), task: task.id }, 'agent task announcement not sent');
  }
}
