/**
 * The memory flush before compaction: a silent turn (its reply is neither
 * delivered nor stored) that shows the model the conversation about to be
 * folded into a summary and asks it to write durable facts to MEMORY.md or
 * today's daily note with its file tools.
 */
import { describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { ChatMessage, LLMProvider } from '../../providers/types.js';
import type { ToolContext } from '../../tools/types.js';
import type { LoopContextBuilder, PromptSession } from '../loop-options.js';
import { type LoopTools, runToolBatch } from '../tool-batch.js';
import { boundToolCalls } from '../tool-call-limits.js';
import { inToolOrder } from '../tool-order.js';
import { TurnMeter } from '../turn-metrics.js';

/** The instruction of the flush turn (tests recognise flush requests by it). */
export const MEMORY_FLUSH_PROMPT =
  '[memory flush] The older part of this conversation is about to be compacted into a short summary. ' +
  'Before that happens, write any durable facts worth keeping (about the user, decisions, promises, open tasks) ' +
  "to memory/MEMORY.md or today's daily note with your file tools. Only write what is not already there. " +
  'This turn is silent: the user will not see your reply, so answer with just "done" when finished.';

export interface MemoryFlushOptions {
  provider: LLMProvider;
  /** Tools of the silent turn: file tools only in practice (no message, spawn, subagent or cron). */
  tools: LoopTools;
  context: LoopContextBuilder;
  history: ChatMessage[];
  session: PromptSession;
  workspace: string;
  logger: Logger;
  model?: string;
  signal?: AbortSignal;
  /** LLM calls at most. @defaultValue 4 */
  maxIterations?: number;
}

/**
 * Runs the flush turn. Never throws (a failed flush must not block the
 * compaction); returns the LLM calls made.
 */
export async function runMemoryFlush(options: MemoryFlushOptions): Promise<number> {
  const log = options.logger.child({ flush: true });
  const meter = new TurnMeter(options.session.sessionKey);
  const signal = options.signal ?? new AbortController().signal;
  const ctx: ToolContext = {
    channel: options.session.channel,
    chatId: options.session.chatId,
    sessionKey: options.session.sessionKey,
    workspace: options.workspace,
    signal,
    logger: log,
    depth: 0,
    send: async () => {
      log.info('memory flush tried to send a message; silent turns send nothing');
    },
  };
  const current: ChatMessage[] = [{ role: 'user', content: MEMORY_FLUSH_PROMPT }];
  const definitions = inToolOrder(options.tools.definitions());
  const max = options.maxIterations ?? 4;
  let calls = 0;
  try {
    while (calls < max) {
      const messages = await options.context.buildMessages({
        history: options.history,
        session: options.session,
        current,
      });
      calls += 1;
      const response = await options.provider.chat({
        messages,
        ...(definitions.length > 0 ? { tools: definitions } : {}),
        ...(options.model ? { model: options.model } : {}),
        // Saying nothing (after saving, or with nothing to save) is how this turn ends.
        allowEmpty: true,
        // The same prefix as the session's own requests: the provider's cache serves it.
        cacheKey: options.session.sessionKey,
        signal,
      });
      if (response.toolCalls.length === 0) break;
      const bounded = boundToolCalls(response.toolCalls);
      current.push({ role: 'assistant', content: response.content || null, toolCalls: bounded.calls });
      const results = await runToolBatch(bounded.calls, {
        answered: bounded.refused,
        tools: options.tools,
        ctx,
        meter,
        cancelled: new Promise(() => undefined),
      });
      current.push(...results);
    }
    log.info({ llmCalls: calls, tools: meter.finish('ok').toolCalls.length }, 'memory flush done');
  } catch (err) {
    log.warn({ err: describeError(err) }, 'memory flush failed; compacting anyway');
  }
  return calls;
}
