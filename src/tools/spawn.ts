/**
 * spawn: starts a background helper as its own job on the bus and answers at
 * once. The helper's result comes back later as a `system` message addressed
 * to this chat, and the main assistant then tells the user about it.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { describeError } from '../errors/index.js';
import type { HelperJob } from '../messages/helper-job.js';
import { fail, ok, type Tool } from './types.js';

/** Where the spawn tool puts helper jobs (the Redis queue in the daemon: bus/helpers-queue.ts). */
export interface HelperQueue {
  enqueue(job: HelperJob): Promise<void>;
}

const parameters = z.object({
  task: z.string().min(1).describe('The task, stated fully: the helper sees nothing of this conversation'),
  label: z.string().min(1).max(60).optional().describe('A short name for the helper, e.g. "flight research"'),
});

/** The spawn tool over a helper queue. */
export function createSpawnTool(queue: HelperQueue): Tool<typeof parameters> {
  return {
    name: 'spawn',
    description:
      'Start a background helper on a longer task (research, a long job) and carry on; its result arrives later ' +
      'as a background task result in this chat, and you then tell the user.',
    parameters,
    async execute({ task, label }, ctx) {
      if (ctx.depth > 0) return fail('helpers cannot spawn other helpers; use subagent or do it yourself');
      const id = `h-${randomUUID().slice(0, 12)}`;
      try {
        await queue.enqueue({
          id,
          task,
          ...(label ? { label } : {}),
          origin: {
            channel: ctx.channel,
            chatId: ctx.chatId,
            ...(ctx.threadId ? { threadId: ctx.threadId } : {}),
            sessionKey: ctx.sessionKey,
          },
          depth: ctx.depth + 1,
          createdAt: new Date().toISOString(),
          ...(ctx.trace ? { trace: ctx.trace } : {}),
        });
      } catch (err) {
        return fail(`the helper could not be started: ${describeError(err)}`);
      }
      ctx.logger.info({ helper: id, label }, 'helper spawned');
      return ok(
        `helper ${id} started${label ? ` (${label})` : ''}. Its result will arrive later as a background task ` +
          'result in this chat; tell the user you started it and end your turn.',
      );
    },
  };
}
