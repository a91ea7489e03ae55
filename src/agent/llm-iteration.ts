/**
 * The back-and-forth with the model inside one turn (AgentLoop.runLLMIteration):
 * build the request, keep it within the context window, call the model, run
 * the tools it asks for (within the size and count limits of
 * tool-call-limits.ts), take in messages that arrived meanwhile, and stop at
 * a plain answer, a hook's stop, a cancellation or the iteration limit. An
 * empty answer is a provider error, never a reply made up here.
 */

import { NOT_APPROVED } from '../approvals/question.js';
import { BudgetError, CancelledError, emptyResponseError, hasCode } from '../errors/index.js';
import type { InboundMessage } from '../messages/messages.js';
import type { ChatMessage, ChatResponse, LLMProvider, ToolCall, ToolDefinition } from '../providers/types.js';
import type { ToolImage } from '../tools/types.js';
import type { TurnCompactor } from './compactor.js';
import type { HookFactory, IterationHook } from './hooks/types.js';
import type { LoopContextBuilder } from './loop-options.js';
import { budgetLevel, type LastCall, requestTokens } from './token-budget.js';
import { type LoopTools, runToolBatch, toolImagesMessage } from './tool-batch.js';
import { boundToolCalls, type ToolCallLimits } from './tool-call-limits.js';
import { type GatedCalls, gateCalls } from './tool-gate.js';
import { inToolOrder } from './tool-order.js';
import { contextFullReply, type TurnRun } from './turn-run.js';
import type { ParkedDecision, TurnOutcome } from './types.js';
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

/** How the iterations end: the reply text and why (and, when parked, the calls waiting for a person). */
export interface IterationResult {
  content: string;
  outcome: TurnOutcome;
  parked?: { calls: GatedCalls['parked']; iteration: number };
}

/** What the iterations carry from one to the next. */
interface IterationState {
  /** The model calls go to (a chat's /model choice, else the configured one). */
  readonly model: string | undefined;
  readonly definitions: ToolDefinition[];
  readonly hooks: IterationHook[];
  /** The iteration running, from 1. */
  iteration: number;
  /** Compactions after a context-length error so far. */
  compactions: number;
  /** The last call's reported usage, to measure the next request from (undefined: measure afresh). */
  last: LastCall | undefined;
  /** Whether the 80 % warning was logged (once per turn). */
  warned: boolean;
}

/** What one iteration leaves: the next one, the same one again (after a compaction), or the end. */
type Step = { next: 'continue' } | { next: 'retry' } | { next: 'end'; result: IterationResult };

const CANCELLED: IterationResult = { content: '', outcome: 'cancelled' };

/**
 * Up to maxIterations LLM calls; tool calls run and their results go back;
 * pending messages join between iterations; a context-length error compacts
 * and retries (at most twice).
 */
export async function runIterations(
  run: TurnRun,
  deps: IterationDeps,
  startIteration = 0,
): Promise<IterationResult> {
  const state: IterationState = {
    model: run.model ?? deps.model,
    definitions: inToolOrder(deps.tools.definitions()),
    hooks: deps.hooks(),
    iteration: startIteration,
    compactions: 0,
    last: undefined,
    warned: false,
  };
  while (state.iteration < deps.maxIterations) {
    if (run.signal.aborted) return { ...CANCELLED };
    if (state.iteration > 0) await drainPending(run, deps);
    state.iteration += 1;
    run.options.onIteration?.(state.iteration);
    const step = await iterate(run, deps, state);
    if (step.next === 'end') return step.result;
    if (step.next === 'retry') state.iteration -= 1;
  }
  return {
    content:
      `I stopped after ${deps.maxIterations} steps without finishing. ` +
      'Tell me to continue if you want me to keep going.',
    outcome: 'max_iterations',
  };
}

/** One iteration: the request within the window, the model's call, then its answer or its tools. */
async function iterate(run: TurnRun, deps: IterationDeps, state: IterationState): Promise<Step> {
  const fitted = await fitToWindow(run, deps, state);
  if ('result' in fitted) return { next: 'end', result: fitted.result };
  const response = await callModel(run, deps, state, fitted.messages);
  if (response === 'retry') return { next: 'retry' };
  if (response === 'cancelled') return { next: 'end', result: { ...CANCELLED } };
  if (response instanceof BudgetError)
    return { next: 'end', result: { content: response.message, outcome: 'budget' } };
  return answerOrRunTools(run, deps, state, response);
}

/**
 * The next request, compacted when it is over the model's window. The budget measures what
 * is sent: the request after the hooks (trimmed tool results). Ends the turn when even
 * compaction cannot make it fit.
 */
async function fitToWindow(
  run: TurnRun,
  deps: IterationDeps,
  state: IterationState,
): Promise<{ messages: ChatMessage[] } | { result: IterationResult }> {
  const prepare = () => prepareRequest(run, deps.context, state.hooks, state.iteration);
  const [prepared, contextTokens] = await Promise.all([prepare(), deps.windowFor(state.model)]);
  let messages = prepared;
  let tokens = requestTokens(messages, state.last);
  if (budgetLevel(tokens, contextTokens) === 'over') {
    const fitted = await deps.compactor.toBudget(run, messages, tokens, prepare, contextTokens);
    state.last = undefined;
    messages = fitted.messages;
    tokens = fitted.tokens;
    if (!fitted.ok) {
      run.log.warn({ tokens, limit: contextTokens }, 'context still over 95% after compaction');
      return { result: { content: contextFullReply(tokens, contextTokens), outcome: 'context_full' } };
    }
  }
  if (!state.warned && budgetLevel(tokens, contextTokens) === 'warn') {
    state.warned = true;
    run.log.warn(
      { tokens, limit: contextTokens, percent: Math.round((tokens / contextTokens) * 100) },
      'context window over 80% full',
    );
  }
  return { messages };
}

/**
 * One call to the model, metered. `cancelled` when the turn was stopped meanwhile; `retry`
 * when a context-length error was answered by a compaction; the BudgetError when a limit
 * refused the call before it was made (the turn ends with its line); other errors are thrown.
 */
async function callModel(
  run: TurnRun,
  deps: IterationDeps,
  state: IterationState,
  messages: ChatMessage[],
): Promise<ChatResponse | BudgetError | 'cancelled' | 'retry'> {
  let response: ChatResponse;
  const timing = { started: run.meter.now(), model: state.model };
  try {
    response = await deps.provider.chat({
      messages,
      ...(state.definitions.length > 0 ? { tools: state.definitions } : {}),
      ...(state.model ? { model: state.model } : {}),
      // Nothing to add is a fine ending once the message tool has answered the chat.
      allowEmpty: run.sentToOrigin(),
      cacheKey: run.req.sessionKey,
      signal: run.signal,
      ...(run.options.onDelta ? { onDelta: run.options.onDelta } : {}),
    });
  } catch (err) {
    if (err instanceof BudgetError) {
      run.log.warn({ limit: err.limit }, 'turn stopped at a spending limit before the model call');
      return err;
    }
    run.meter.llmCall(undefined, undefined, { ...timing, ok: false });
    if (err instanceof CancelledError || run.signal.aborted) return 'cancelled';
    if (await compactedAfter(err, run, deps, state)) return 'retry';
    throw err;
  }
  run.meter.llmCall(response.usage, response.answeredBy, {
    ...timing,
    model: response.model ?? timing.model,
  });
  state.last = response.usage ? { ...response.usage, sentMessages: messages.length } : undefined;
  return response;
}

/** After a context-length error (at most {@link MAX_COMPACTIONS} per turn): true when compacting made room. */
async function compactedAfter(
  err: unknown,
  run: TurnRun,
  deps: IterationDeps,
  state: IterationState,
): Promise<boolean> {
  if (!hasCode(err, 'CONTEXT_LENGTH_EXCEEDED') || state.compactions >= MAX_COMPACTIONS) return false;
  state.compactions += 1;
  run.log.warn({ attempt: state.compactions }, 'context length exceeded; compacting and retrying');
  if (!(await deps.compactor.afterContextError(run, state.compactions))) return false;
  state.last = undefined;
  return true;
}

/**
 * The model's answer ends the turn; its tool calls (bounded, then shown to the hooks) are
 * recorded and run, and the next iteration follows.
 */
async function answerOrRunTools(
  run: TurnRun,
  deps: IterationDeps,
  state: IterationState,
  response: ChatResponse,
): Promise<Step> {
  if (response.toolCalls.length === 0)
    return { next: 'end', result: { content: finalText(run, response.content), outcome: 'ok' } };
  // Oversized and surplus calls are answered without running; hooks and the session see them cut down.
  const { calls, refused, cutDown } = boundToolCalls(response.toolCalls, deps.toolCallLimits);
  // The reported completion tokens count what was cut away: measure the next request afresh.
  if (cutDown) state.last = undefined;
  if (refused.size > 0) {
    run.log.warn(
      { calls: calls.length, refused: refused.size },
      'tool calls refused (too large or too many)',
    );
  }
  const decided = askHooks(run, state, { ...response, toolCalls: calls }, refused);
  if ('stop' in decided) return { next: 'end', result: { content: decided.stop, outcome: 'loop' } };
  await run.record({ role: 'assistant', content: response.content || null, toolCalls: calls });
  return gateAndRun(run, deps, calls, decided.answered, state.iteration);
}

/**
 * Runs the calls the approval gate lets through (and answers those it
 * denied); when any waits for a person, the turn ends parked on it.
 */
async function gateAndRun(
  run: TurnRun,
  deps: IterationDeps,
  calls: ToolCall[],
  answered: ReadonlyMap<string, string>,
  iteration: number,
): Promise<Step> {
  const gated = await gateCalls(
    calls.filter((c) => !answered.has(c.id)),
    deps.tools,
    run.options.approvals,
    {
      chat: { channel: run.req.channel, chatId: run.req.chatId },
      workspace: run.toolCtx.workspace,
      taint: run.taint,
    },
  );
  const waiting = new Set(gated.parked.map((p) => p.call.id));
  await runTools(
    run,
    deps,
    calls.filter((c) => !waiting.has(c.id)),
    new Map([...answered, ...gated.answered]),
  );
  if (run.signal.aborted) return { next: 'end', result: { ...CANCELLED } };
  if (gated.parked.length > 0) {
    return {
      next: 'end',
      result: { content: '', outcome: 'waiting', parked: { calls: gated.parked, iteration } },
    };
  }
  return { next: 'continue' };
}

/**
 * Goes on with a parked turn once its question was settled: the call runs
 * (`run`) or gets the reason it did not; the calls parked behind it are
 * judged again (an "always" answer may now allow them); then the iterations
 * continue where they stopped.
 */
export async function resumeIterations(
  run: TurnRun,
  deps: IterationDeps,
  resume: { call: ToolCall; decision: ParkedDecision; rest: ToolCall[]; iteration: number },
): Promise<IterationResult> {
  const { call, decision, rest } = resume;
  const answer = decision === 'run' ? undefined : `Error: ${NOT_APPROVED[decision]}`;
  // A turn redone after a crash past this point finds the call answered in the session: not again.
  const done = run.history.some((m) => m.role === 'tool' && m.toolCallId === call.id);
  if (!done)
    await runTools(run, deps, [call], answer === undefined ? new Map() : new Map([[call.id, answer]]));
  if (decision === 'cancelled' || run.signal.aborted) {
    await runTools(run, deps, rest, new Map(rest.map((c) => [c.id, NOT_APPROVED.cancelled])));
    return { ...CANCELLED };
  }
  if (rest.length > 0) {
    const step = await gateAndRun(run, deps, rest, new Map(), resume.iteration);
    if (step.next === 'end') return step.result;
  }
  return runIterations(run, deps, resume.iteration);
}

/**
 * The hooks' word on the bounded calls: a stop (the loop guard's reply), or the calls answered
 * without running (the refused ones, then the hooks' answers).
 */
function askHooks(
  run: TurnRun,
  state: IterationState,
  bounded: ChatResponse,
  refused: ReadonlyMap<string, string>,
): { stop: string } | { answered: Map<string, string> } {
  const answered = new Map(refused);
  for (const hook of state.hooks) {
    const decision = hook.afterCall?.({ iteration: state.iteration, response: bounded, log: run.log }) ?? {
      action: 'continue',
    };
    if (decision.action === 'stop') return { stop: decision.reply };
    if (decision.action !== 'answer') continue;
    for (const [id, text] of decision.results) if (!refused.has(id)) answered.set(id, text);
  }
  return { answered };
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
    // What it returned came from outside (a page, search results, an MCP answer): later risky calls ask.
    const untrusted = deps.tools.facts?.(call.name)?.untrustedOutput;
    if (untrusted !== undefined) run.taint ??= untrusted;
    return ran.shift()!;
  });
  if (results.length === 0) return;
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
