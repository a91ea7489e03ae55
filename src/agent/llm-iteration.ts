/**
 * The back-and-forth with the model inside one turn (AgentLoop.runLLMIteration):
 * build the request, keep it within the context window, call the model, run
 * the tools it asks for (within the size and count limits of
 * tool-call-limits.ts), take in messages that arrived meanwhile, and stop at
 * a plain answer, a hook's stop, a cancellation or the iteration limit. An
 * empty answer is a provider error, never a reply made up here.
 */

import { CancelledError, emptyResponseError, hasCode } from '../errors/index.js';
import type { InboundMessage } from '../messages/messages.js';
import type { ChatMessage, LLMProvider, ToolCall } from '../providers/types.js';
import type { ToolImage } from '../tools/types.js';
import type { TurnCompactor } from './compactor.js';
import type { HookFactory, IterationHook } from './hooks/types.js';
import type { LoopContextBuilder } from './loop-options.js';
import { budgetLevel, type LastCall, requestTokens } from './token-budget.js';
import { type LoopTools, runToolBatch, toolImagesMessage } from './tool-batch.js';
import { boundToolCalls, type ToolCallLimits } from './tool-call-limits.js';
import { inToolOrder } from './tool-order.js';
import { contextFullReply, type TurnRun } from './turn-run.js';
import type { TurnOutcome } from './types.js';
import type { UserTurnMessage } from './user-content.js';

/** Compactions after a context-length error, per turn. */
const MAX_COMPACTIONS = 2;

/** What the iterations need from the AgentLoop (its merged options and parts). */
export interface IterationDeps {
  provider: LLMProvider;
  tools: LoopTools;
  context: LoopContextBuilder;
  hooks: HookFactory;
  compactor: TurnCompactor;
  maxIterations: number;
  /**
   * The context window of the model the next call with `model` goes to (the first that is not
   * resting after failures), so the budget follows the model actually used.
   */
  windowFor: (model: string | undefined) => Promise<number>;
  /** Size and count limits on the tool calls of one response. */
  toolCallLimits: ToolCallLimits;
  /** Overrides the provider's default model (a chat's /model choice overrides this). */
  model?: string;
  /** Converts messages that arrived during the turn into user messages. */
  userMessages: (batch: InboundMessage[], signal?: AbortSignal) => Promise<UserTurnMessage[]>;
}

/**
 * Up to maxIterations LLM calls; tool calls run and their results go back;
 * pending messages join between iterations; a context-length error compacts
 * and retries (at most twice).
 */
export async function runIterations(
  run: TurnRun,
  deps: IterationDeps,
): Promise<{ content: string; outcome: TurnOutcome }> {
  const { req, signal, meter } = run;
  const model = run.model ?? deps.model;
  const definitions = inToolOrder(deps.tools.definitions());
  const hooks: IterationHook[] = deps.hooks();
  let compactions = 0;
  let iteration = 0;
  let last: LastCall | undefined;
  let warned = false;
  while (iteration < deps.maxIterations) {
    if (signal.aborted) return { content: '', outcome: 'cancelled' };
    if (iteration > 0) await drainPending(run, deps);
    iteration += 1;
    run.options.onIteration?.(iteration);
    // The budget measures what is sent: the request after the hooks (trimmed tool results).
    const prepare = () => prepareRequest(run, deps.context, hooks, iteration);
    const [prepared, contextTokens] = await Promise.all([prepare(), deps.windowFor(model)]);
    let messages = prepared;
    let tokens = requestTokens(messages, last);
    if (budgetLevel(tokens, contextTokens) === 'over') {
      const fitted = await deps.compactor.toBudget(run, messages, tokens, prepare, contextTokens);
      last = undefined;
      messages = fitted.messages;
      tokens = fitted.tokens;
      if (!fitted.ok) {
        run.log.warn({ tokens, limit: contextTokens }, 'context still over 95% after compaction');
        return { content: contextFullReply(tokens, contextTokens), outcome: 'context_full' };
      }
    }
    if (!warned && budgetLevel(tokens, contextTokens) === 'warn') {
      warned = true;
      run.log.warn(
        { tokens, limit: contextTokens, percent: Math.round((tokens / contextTokens) * 100) },
        'context window over 80% full',
      );
    }
    let response: Awaited<ReturnType<LLMProvider['chat']>>;
    try {
      response = await deps.provider.chat({
        messages,
        ...(definitions.length > 0 ? { tools: definitions } : {}),
        ...(model ? { model } : {}),
        // Nothing to add is a fine ending once the message tool has answered the chat.
        allowEmpty: run.sentToOrigin(),
        cacheKey: req.sessionKey,
        signal,
        ...(run.options.onDelta ? { onDelta: run.options.onDelta } : {}),
      });
    } catch (err) {
      meter.llmCall(undefined);
      if (err instanceof CancelledError || signal.aborted) return { content: '', outcome: 'cancelled' };
      if (hasCode(err, 'CONTEXT_LENGTH_EXCEEDED') && compactions < MAX_COMPACTIONS) {
        compactions += 1;
        run.log.warn({ attempt: compactions }, 'context length exceeded; compacting and retrying');
        if (await deps.compactor.afterContextError(run, compactions)) {
          iteration -= 1;
          last = undefined;
          continue;
        }
      }
      throw err;
    }
    meter.llmCall(response.usage, response.answeredBy);
    last = response.usage ? { ...response.usage, sentMessages: messages.length } : undefined;
    if (response.toolCalls.length === 0) return { content: finalText(run, response.content), outcome: 'ok' };
    // Oversized and surplus calls are answered without running; hooks and the session see them cut down.
    const { calls, refused, cutDown } = boundToolCalls(response.toolCalls, deps.toolCallLimits);
    // The reported completion tokens count what was cut away: measure the next request afresh.
    if (cutDown) last = undefined;
    if (refused.size > 0) {
      run.log.warn(
        { calls: calls.length, refused: refused.size },
        'tool calls refused (too large or too many)',
      );
    }
    const bounded = { ...response, toolCalls: calls };
    const answered = new Map(refused);
    for (const hook of hooks) {
      const decision = hook.afterCall?.({ iteration, response: bounded, log: run.log }) ?? {
        action: 'continue',
      };
      if (decision.action === 'stop') return { content: decision.reply, outcome: 'loop' };
      if (decision.action !== 'answer') continue;
      for (const [id, text] of decision.results) if (!refused.has(id)) answered.set(id, text);
    }
    await run.record({
      role: 'assistant',
      content: response.content || null,
      toolCalls: calls,
    });
    await runTools(run, deps, calls, answered);
    if (signal.aborted) return { content: '', outcome: 'cancelled' };
  }
  return {
    content:
      `I stopped after ${deps.maxIterations} steps without finishing. ` +
      'Tell me to continue if you want me to keep going.',
    outcome: 'max_iterations',
  };
}

/**
 * The model's final text. Blank text is an answer only when the message tool
 * already answered the chat (a silent turn); otherwise it is PROVIDER_EMPTY_RESPONSE
 * (transient), whichever provider sent it.
 */
function finalText(run: TurnRun, content: string): string {
  if (content.trim() !== '') return content;
  if (run.sentToOrigin()) return '';
  throw emptyResponseError('no text and no tool calls');
}

/** The messages of the next call: context, history and the turn, then each hook's `beforeCall`. */
async function prepareRequest(
  run: TurnRun,
  context: LoopContextBuilder,
  hooks: IterationHook[],
  iteration: number,
): Promise<ChatMessage[]> {
  let messages = await context.buildMessages({
    history: run.history,
    session: run.promptSession,
    current: run.turn,
  });
  for (const hook of hooks) {
    if (hook.beforeCall) messages = hook.beforeCall({ iteration, messages, log: run.log });
  }
  return messages;
}

/** Runs the calls (those a hook answered get its text instead) and records the results in call order. */
async function runTools(
  run: TurnRun,
  deps: IterationDeps,
  calls: ToolCall[],
  answered: ReadonlyMap<string, string>,
): Promise<void> {
  const images: ToolImage[] = [];
  const ran = await runToolBatch(
    calls.filter((c) => !answered.has(c.id)),
    {
      tools: deps.tools,
      ctx: run.toolCtx,
      meter: run.meter,
      cancelled: run.cancelled,
      onUserText: run.sendUserText,
      ...(run.options.onTool ? { onStart: run.options.onTool } : {}),
      onImages: (found) => images.push(...found),
    },
  );
  const results = calls.map((call): ChatMessage => {
    const note = answered.get(call.id);
    if (note !== undefined) return { role: 'tool', toolCallId: call.id, name: call.name, content: note };
    return ran.shift()!;
  });
  await run.record(...results);
  // Images (an MCP screenshot) reach the model after the results; the session keeps the text only.
  if (images.length > 0) run.turn.push(toolImagesMessage(images));
}

/** Adds messages that arrived for the session while the turn ran. */
async function drainPending(run: TurnRun, deps: IterationDeps): Promise<void> {
  const pending = (await run.options.drainPending?.()) ?? [];
  if (pending.length === 0) return;
  const user = await deps.userMessages(pending, run.signal);
  const ids = pending.map((m) => m.id);
  run.req.ids.push(...ids);
  await run.addUser(user, ids, deps.context);
}
