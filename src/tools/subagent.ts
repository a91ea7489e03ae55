/**
 * subagent: runs a helper synchronously inside the turn for a sub-task and
 * returns its final text to the model, whole. The user sees only what the
 * model makes of it (logs show a truncated preview). Refused at the
 * delegation depth limit (ToolContext.depth).
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { HelperOrigin } from '../messages/helper-job.js';
import { fail, ok, type Tool } from './types.js';

const parameters = z.object({
  task: z
    .string()
    .min(1)
    .describe('The sub-task, stated fully: the helper sees nothing of this conversation'),
  label: z.string().min(1).max(60).optional().describe('A short name for the helper'),
});

/** One helper run the subagent tool asks for (a subset of helpers/runner.ts `HelperRun`). */
export interface SubagentRun {
  id: string;
  task: string;
  label?: string;
  /** Depth of the helper itself (≥ 1). */
  depth: number;
  origin: HelperOrigin;
  kind: 'subagent';
  signal?: AbortSignal;
}

/** What subagent needs from the HelperRunner (helpers/runner.ts implements it). */
export interface SubagentRunner {
  readonly maxDepth: number;
  /** `outcome` is the helper turn's TurnOutcome (agent/types.ts). */
  run(run: SubagentRun): Promise<{ text: string; outcome: string }>;
}

/** How long one subagent call may take, whole helper turn included: 30 minutes. */
export const SUBAGENT_TIME_LIMIT_MS = 30 * 60 * 1000;

export interface SubagentToolOptions {
  /**
   * The call's time limit; on expiry the helper's signal is aborted and the
   * model reads "timed out".
   * @defaultValue {@link SUBAGENT_TIME_LIMIT_MS}
   */
  timeLimitMs?: number;
}

/** The subagent tool. */
export function createSubagentTool(
  runner: SubagentRunner,
  options: SubagentToolOptions = {},
): Tool<typeof parameters> {
  return {
    name: 'subagent',
    description:
      'Run a helper agent now on a self-contained sub-task and get its final answer back (it has your file, ' +
      'exec and web tools but not this conversation). Use for focused research or work inside this turn.',
    parameters,
    // A helper runs a whole turn of its own (model calls and tools), far past the registry's default.
    timeLimitMs: options.timeLimitMs ?? SUBAGENT_TIME_LIMIT_MS,
    async execute({ task, label }, ctx) {
      const depth = ctx.depth + 1;
      if (depth > runner.maxDepth) {
        return fail(
          `delegation depth limit reached (${runner.maxDepth}): do this sub-task yourself instead of delegating`,
        );
      }
      const id = `sub-${randomUUID().slice(0, 12)}`;
      const result = await runner.run({
        id,
        task,
        ...(label ? { label } : {}),
        depth,
        kind: 'subagent',
        origin: {
          channel: ctx.channel,
          chatId: ctx.chatId,
          ...(ctx.threadId ? { threadId: ctx.threadId } : {}),
          sessionKey: ctx.sessionKey,
        },
        signal: ctx.signal,
      });
      if (result.outcome === 'error' || result.outcome === 'cancelled' || result.outcome === 'skipped') {
        return fail(`helper ${id} did not finish (${result.outcome}): ${result.text}`);
      }
      return ok(`Helper ${id}${label ? ` (${label})` : ''} answered:\n\n${result.text}`);
    },
  };
}
