/**
 * HelperRunner: runs one helper agent to the end — its own session
 * (`helper:<id>`), its own tool set (no `spawn`, no `message`, no `cron`, and
 * no `subagent` at the depth limit), at most 10 LLM calls — and returns its
 * final text. Used synchronously by `subagent` and from the helper queue for
 * `spawn`. A redone run (after a crash) finds its task already stored and
 * carries on from its session.
 */

import type { AgentLoop } from '../agent/loop.js';
import type { TurnOutcome } from '../agent/types.js';
import type { TurnApprovals } from '../approvals/ports.js';
import type { UnattendedBudget } from '../budget/ports.js';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import type { HelperOrigin, HelperRecord } from '../messages/helper-job.js';
import type { ToolRegistry } from '../tools/registry.js';
import { DEFAULT_MAX_DEPTH, type HelperTracker } from './types.js';

/** Tools a helper never gets: it reports through its result, not by messaging chats or spawning. */
export const HELPER_EXCLUDED_TOOLS = ['spawn', 'message', 'cron'] as const;

export interface HelperRunnerOptions {
  /** The main agent's tools (read when the first helper runs, so the registry may be built after the runner). */
  tools: () => ToolRegistry;
  /** Builds the agent loop of a helper level from its tools. */
  makeLoop: (tools: ToolRegistry) => Pick<AgentLoop, 'runAgentLoop'>;
  logger: Logger;
  /** Records running helpers. @defaultValue none (the log only) */
  tracker?: HelperTracker;
  /** Deepest level a helper may run at. @defaultValue 2 */
  maxDepth?: number;
  /** What a helper's risky calls meet (they cannot wait for a person: denied). @defaultValue none asks */
  approvals?: TurnApprovals;
  /** Asked before a helper starts: at a spending limit it is skipped (logged, counted). @defaultValue none */
  budget?: UnattendedBudget;
}

export interface HelperRun {
  id: string;
  task: string;
  label?: string;
  /** Depth of the helper itself (≥ 1). */
  depth: number;
  origin: HelperOrigin;
  kind: HelperRecord['kind'];
  signal?: AbortSignal;
}

export interface HelperOutcome {
  text: string;
  outcome: TurnOutcome;
}

/** The message a helper starts from. */
export function helperTaskMessage(task: string): string {
  return (
    '[helper task] You are a helper working for the main assistant. Do this task with your tools and finish ' +
    'with your findings as plain text; the main assistant reads your final answer and tells the user.\n\n' +
    `Task: ${task}`
  );
}

/** The session key of a helper. */
export function helperSessionKey(id: string): string {
  return `helper:${id}`;
}

export class HelperRunner {
  readonly maxDepth: number;
  readonly #o: HelperRunnerOptions;
  readonly #loops = new Map<boolean, Pick<AgentLoop, 'runAgentLoop'>>();

  constructor(options: HelperRunnerOptions) {
    const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
    if (!Number.isInteger(maxDepth) || maxDepth < 1) {
      throw new RangeError(`maxDepth must be a positive whole number, not ${maxDepth}`);
    }
    this.maxDepth = maxDepth;
    this.#o = options;
  }

  /** Names of the tools a helper at `depth` gets. */
  toolNames(depth: number): string[] {
    return this.#tools(depth).names();
  }

  /**
   * Runs the helper to its final text.
   * @throws whatever the agent loop throws (provider errors); the caller decides about retries.
   */
  async run(run: HelperRun): Promise<HelperOutcome> {
    if (run.depth > this.maxDepth) {
      return { text: `delegation depth limit (${this.maxDepth}) reached`, outcome: 'skipped' };
    }
    const log = this.#o.logger.child({ helper: run.id, depth: run.depth });
    const blocked = await this.#o.budget?.blocked(helperSessionKey(run.id));
    if (blocked !== undefined) {
      log.warn('helper skipped: a spending limit is reached');
      await this.#o.budget?.skipped('helper');
      return { text: blocked, outcome: 'skipped' };
    }
    const record: HelperRecord = {
      id: run.id,
      ...(run.label ? { label: run.label } : {}),
      kind: run.kind,
      origin: run.origin,
      task: run.task.slice(0, 200),
      startedAt: new Date().toISOString(),
      pid: process.pid,
    };
    await this.#track(() => this.#o.tracker?.started(record), log);
    log.info({ label: run.label, kind: run.kind, origin: run.origin.sessionKey }, 'helper started');
    try {
      const content = helperTaskMessage(run.task);
      const result = await this.#loop(run.depth).runAgentLoop(
        {
          sessionKey: helperSessionKey(run.id),
          channel: 'system',
          chatId: run.id,
          user: [{ forModel: { role: 'user', content }, forLog: { role: 'user', content } }],
          ids: [`helper-task:${run.id}`],
          recordChannel: false,
        },
        {
          depth: run.depth,
          ...(run.signal ? { signal: run.signal } : {}),
          ...(this.#o.approvals ? { approvals: this.#o.approvals } : {}),
          outbound: {
            publish: async (message) => {
              log.debug(
                { chars: message.content.length },
                'helper output for the user dropped (helpers report through their result)',
              );
            },
          },
        },
      );
      const text = result.reply ?? '';
      log.info(
        { outcome: result.metrics.outcome, llmCalls: result.metrics.llmCalls, preview: preview(text) },
        'helper finished',
      );
      return { text, outcome: result.metrics.outcome };
    } finally {
      await this.#track(() => this.#o.tracker?.finished(run.id), log);
    }
  }

  #tools(depth: number): ToolRegistry {
    const atLimit = depth >= this.maxDepth;
    return this.#o.tools().without(...HELPER_EXCLUDED_TOOLS, ...(atLimit ? ['subagent'] : []));
  }

  #loop(depth: number): Pick<AgentLoop, 'runAgentLoop'> {
    const atLimit = depth >= this.maxDepth;
    let loop = this.#loops.get(atLimit);
    if (!loop) {
      loop = this.#o.makeLoop(this.#tools(depth));
      this.#loops.set(atLimit, loop);
    }
    return loop;
  }

  async #track(fn: () => Promise<void> | undefined, log: Logger): Promise<void> {
    try {
      await fn();
    } catch (err) {
      log.warn({ err: describeError(err) }, 'could not record the helper in the status list');
    }
  }
}

/** The first 200 characters of a helper's text, for logs. */
export function preview(text: string, max = 200): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
