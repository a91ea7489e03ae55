/**
 * AgentLoop (seed 003): processMessage → runAgentLoop → runLLMIteration.
 * One turn builds the context, calls the model, runs tools until a plain
 * answer, persists every message as it happens and returns the reply for the
 * caller (worker or CLI) to deliver. Long sessions are summarised afterwards
 * in the background.
 */
import type { InboundMessage } from '../bus/messages.js';
import { isInternalChannel, sessionKeyOf } from '../bus/messages.js';
import { AppError, CancelledError, describeError, hasCode } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import type { ChatMessage, LLMProvider, ToolCall } from '../providers/types.js';
import type { ToolContext } from '../tools/types.js';
import { TurnCompactor } from './compactor.js';
import { defaultHooks } from './hooks/default-hooks.js';
import type { IterationHook } from './hooks/types.js';
import type { AgentLoopOptions, PromptSession } from './loop-options.js';
import { LruMap } from './lru-map.js';
import { contextLimitFor } from './model-limits.js';
import { parseSlashCommand, runSlashCommand, type SessionUsage } from './slash-commands.js';
import { estimateTokens } from './summarize.js';
import { SessionSummarizer } from './summarizer.js';
import { budgetLevel, type LastCall, requestTokens } from './token-budget.js';
import { runToolBatch } from './tool-batch.js';
import { createTurnToolContext, type TurnToolContext } from './tool-context.js';
import { logTurn, TurnMeter } from './turn-metrics.js';
import {
  directMessage,
  frameBackgroundResult,
  inboundIdOf,
  originOf,
  type TurnRequest,
  targetOf,
  targetOfRequest,
} from './turn-request.js';
import type { AgentRunner, TurnOptions, TurnOutcome, TurnResult } from './types.js';
import { toUserMessages, type UserTurnMessage } from './user-content.js';

export type { AgentLoopOptions, LoopContextBuilder, PromptSession } from './loop-options.js';
export type { LoopTools } from './tool-batch.js';
export type { TurnRequest } from './turn-request.js';

/** Reply sent when a turn is cancelled. */
export const STOPPED_REPLY = 'Stopped.';
const DEFAULT_REPLY = 'Done. I have nothing more to add.';
const MAX_COMPACTIONS = 2;
/** How many sessions' token totals (/status) a long-running worker keeps. */
const USAGE_SESSIONS = 1000;

/** The reply when the conversation does not fit the model's window even after compaction. */
export function contextFullReply(tokens: number, limit: number): string {
  return (
    `This conversation no longer fits in the model's context window (about ${tokens} of ${limit} tokens, ` +
    'even after compacting older messages). Send /new to start a fresh session.'
  );
}

/** The state of one running turn. */
export interface TurnRun {
  req: TurnRequest;
  options: TurnOptions;
  signal: AbortSignal;
  cancelled: Promise<void>;
  meter: TurnMeter;
  log: Logger;
  toolCtx: ToolContext;
  /** Shows a tool result's `forUser` text in the origin chat. */
  sendUserText: (text: string) => Promise<void>;
  /** Prior history (may include this turn's messages after a compaction), summary, this turn's messages. */
  history: ChatMessage[];
  summary: string | undefined;
  turn: ChatMessage[];
}

/** The agent core. Shared by every session; all per-turn state lives in the turn. */
export class AgentLoop implements AgentRunner {
  readonly #o: Required<
    Pick<AgentLoopOptions, 'maxIterations' | 'keepLastMessages' | 'defaultReply' | 'hooks' | 'contextTokens'>
  > &
    AgentLoopOptions & { summarizeAtTokens: number };
  readonly #summarizer: SessionSummarizer;
  readonly #compactor: TurnCompactor;
  /** Token totals per session for /status, for the most recent sessions only (bounded). */
  readonly #usage = new LruMap<string, SessionUsage>(USAGE_SESSIONS);

  constructor(options: AgentLoopOptions) {
    const maxIterations = options.maxIterations ?? 20;
    if (!Number.isInteger(maxIterations) || maxIterations < 1) {
      throw new AppError(
        'CONFIG_INVALID',
        `maxIterations must be a positive whole number, not ${maxIterations}`,
      );
    }
    const contextTokens = contextLimitFor(options.model ?? options.provider.model, options.contextTokens);
    this.#o = {
      ...options,
      contextTokens,
      hooks: options.hooks ?? defaultHooks,
      maxIterations,
      keepLastMessages: options.keepLastMessages ?? 8,
      defaultReply: options.defaultReply ?? DEFAULT_REPLY,
      // Background summaries keep sessions lean well before a large window fills (cost, latency).
      summarizeAtTokens: options.summarizeAtTokens ?? Math.floor(Math.min(contextTokens, 32_000) * 0.6),
    };
    this.#summarizer = new SessionSummarizer({
      provider: options.provider,
      sessions: options.sessions,
      logger: options.logger,
      budgetTokens: this.#o.summarizeAtTokens,
      keepLastMessages: this.#o.keepLastMessages,
      ...(options.model ? { model: options.model } : {}),
      ...(options.memoryFlush ? { beforeSummary: (key: string) => this.flushMemory(key) } : {}),
    });
    this.#compactor = new TurnCompactor({
      provider: options.provider,
      sessions: options.sessions,
      summarizer: this.#summarizer,
      context: options.context,
      flushTools: options.flushTools ?? options.tools,
      workspace: options.workspace,
      logger: options.logger,
      contextTokens,
      keepLastMessages: this.#o.keepLastMessages,
      memoryFlush: options.memoryFlush ?? false,
      ...(options.model ? { model: options.model } : {}),
    });
  }

  /**
   * The silent memory-flush turn (runs before a session is compacted): the
   * model is asked to save durable facts with its file tools; nothing it says
   * is delivered or stored.
   */
  async flushMemory(sessionKey: string, signal?: AbortSignal): Promise<void> {
    await this.#compactor.flushMemory(sessionKey, signal);
  }

  /** The context window turns are budgeted against (tokens). */
  get contextTokens(): number {
    return this.#o.contextTokens;
  }

  /** The model turns use. */
  get model(): string {
    return this.#o.model ?? this.#o.provider.model;
  }

  async processMessage(
    messages: InboundMessage | InboundMessage[],
    options: TurnOptions = {},
  ): Promise<TurnResult> {
    const batch = Array.isArray(messages) ? messages : [messages];
    const first = batch[0];
    if (!first) throw new AppError('INVALID_MESSAGE', 'processMessage needs at least one message');
    if (batch.every((m) => isInternalChannel(m.channel))) return this.processSystemMessage(batch, options);
    const command = first.media.length === 0 ? parseSlashCommand(first.content) : undefined;
    if (!command || isInternalChannel(first.channel))
      return this.runAgentLoop(await this.#request(batch, options.signal), options);
    const key = sessionKeyOf(first);
    const meter = new TurnMeter(key);
    // A summary finishing after /new would mark the fresh session's first messages as summarised.
    if (command === 'new') await this.#summarizer.settled(key);
    const reply = await runSlashCommand(command, {
      sessionKey: key,
      sessions: this.#o.sessions,
      model: this.model,
      usage: this.#usage.get(key),
    });
    if (command === 'new') this.#usage.delete(key);
    if (batch.length > 1) {
      const rest = await this.processMessage(batch.slice(1), options);
      return { ...rest, reply: rest.reply === undefined ? reply : `${reply}\n\n${rest.reply}` };
    }
    const metrics = meter.finish('command');
    logTurn(this.#o.logger.child({ session: key }), metrics);
    return { sessionKey: key, reply, target: targetOf(first), metrics };
  }

  /**
   * A message on the `system` channel (a helper's result): `metadata.origin`
   * names the chat; it becomes a turn of that chat's session, framed as a
   * background task result, with the reply going to that chat.
   */
  async processSystemMessage(batch: InboundMessage[], options: TurnOptions = {}): Promise<TurnResult> {
    const first = batch[0]!;
    const o = originOf(first);
    if (!o) {
      const key = sessionKeyOf(first);
      this.#o.logger.warn(
        { session: key, id: first.id },
        'system message without a valid metadata.origin; skipped',
      );
      const metrics = new TurnMeter(key).finish('skipped');
      return {
        sessionKey: key,
        reply: undefined,
        target: { channel: first.channel, chatId: first.chatId },
        metrics,
      };
    }
    const user = await this.#userMessages(batch, options.signal);
    return this.runAgentLoop(
      {
        sessionKey: o.sessionKey ?? sessionKeyOf(o),
        channel: o.channel,
        chatId: o.chatId,
        ...(o.threadId ? { threadId: o.threadId } : {}),
        user,
        ids: batch.map((m) => m.id),
        recordChannel: false,
      },
      options,
    );
  }

  async processDirect(content: string, sessionKey: string, options: TurnOptions = {}): Promise<TurnResult> {
    return this.processMessage([directMessage(content, sessionKey)], options);
  }

  /** A heartbeat turn: session `heartbeat`, no history; its chat is the last active one. */
  async processHeartbeat(prompt: string, options: TurnOptions = {}): Promise<TurnResult> {
    const last = await this.#o.state?.getLastChannel();
    return this.runAgentLoop(
      {
        sessionKey: 'heartbeat',
        channel: last?.channel ?? 'system',
        chatId: last?.chatId ?? 'heartbeat',
        ...(last?.threadId ? { threadId: last.threadId } : {}),
        user: [{ forModel: { role: 'user', content: prompt }, forLog: { role: 'user', content: prompt } }],
        ids: [],
        noHistory: true,
        recordChannel: false,
      },
      options,
    );
  }

  /** One full turn: context, the model and tools, persistence, metrics. */
  async runAgentLoop(req: TurnRequest, options: TurnOptions = {}): Promise<TurnResult> {
    const meter = new TurnMeter(req.sessionKey);
    const log = this.#o.logger.child({ session: req.sessionKey });
    const signal = options.signal ?? new AbortController().signal;
    const stopWaiting = new AbortController();
    const cancelled = new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      const onAbort = () => resolve();
      signal.addEventListener('abort', onAbort, { once: true });
      stopWaiting.signal.addEventListener('abort', () => signal.removeEventListener('abort', onAbort));
    });
    try {
      // Recorded while the history loads (it never throws: a failure is logged).
      const recording = req.recordChannel
        ? this.recordLastChannel(req.channel, req.chatId, req.threadId)
        : undefined;
      const { ctx, sentToOrigin, sendUserText } = this.updateToolContexts(req, signal, options, log);
      const [history, summary] = req.noHistory
        ? [[], undefined]
        : await Promise.all([
            this.#o.sessions.getContextHistory(req.sessionKey),
            this.#o.sessions.getSummary(req.sessionKey),
          ]);
      await recording;
      const run: TurnRun = {
        ...{ req, options, signal, cancelled, meter, log, toolCtx: ctx, sendUserText },
        ...{ history, summary, turn: [] },
      };
      await this.#addUser(run, req.user, req.ids);

      const { content, outcome } = await this.runLLMIteration(run);
      const text =
        outcome === 'cancelled' ? STOPPED_REPLY : content.trim() === '' ? this.#o.defaultReply : content;
      await this.#record(run, { role: 'assistant', content: text });
      const metrics = meter.finish(outcome);
      logTurn(log, metrics);
      if (!req.noHistory && outcome !== 'cancelled' && this.#overBudget(run))
        this.maybeSummarize(req.sessionKey);
      const silent = outcome === 'ok' && sentToOrigin();
      return {
        sessionKey: req.sessionKey,
        reply: silent ? undefined : text,
        target: targetOfRequest(req),
        metrics,
      };
    } catch (err) {
      logTurn(log, meter.finish('error'));
      throw err;
    } finally {
      stopWaiting.abort();
    }
  }

  /**
   * The back-and-forth with the model: up to maxIterations LLM calls; tool
   * calls run and their results go back; pending messages join between
   * iterations; a context-length error compacts and retries (at most twice).
   */
  async runLLMIteration(run: TurnRun): Promise<{ content: string; outcome: TurnOutcome }> {
    const { req, signal, meter } = run;
    const definitions = this.#o.tools.definitions();
    const hooks: IterationHook[] = this.#o.hooks();
    let compactions = 0;
    let iteration = 0;
    let last: LastCall | undefined;
    let warned = false;
    while (iteration < this.#o.maxIterations) {
      if (signal.aborted) return { content: '', outcome: 'cancelled' };
      if (iteration > 0) await this.#drainPending(run);
      iteration += 1;
      run.options.onIteration?.(iteration);
      // The budget measures what is sent: the request after the hooks (trimmed tool results).
      const prepare = () => this.#prepareRequest(run, hooks, iteration);
      let messages = await prepare();
      let tokens = requestTokens(messages, last);
      if (budgetLevel(tokens, this.#o.contextTokens) === 'over') {
        const fitted = await this.#compactor.toBudget(run, messages, tokens, prepare);
        last = undefined;
        messages = fitted.messages;
        tokens = fitted.tokens;
        if (!fitted.ok) {
          run.log.warn({ tokens, limit: this.#o.contextTokens }, 'context still over 95% after compaction');
          return { content: contextFullReply(tokens, this.#o.contextTokens), outcome: 'context_full' };
        }
      }
      if (!warned && budgetLevel(tokens, this.#o.contextTokens) === 'warn') {
        warned = true;
        run.log.warn(
          {
            tokens,
            limit: this.#o.contextTokens,
            percent: Math.round((tokens / this.#o.contextTokens) * 100),
          },
          'context window over 80% full',
        );
      }
      let response: Awaited<ReturnType<LLMProvider['chat']>>;
      try {
        response = await this.#o.provider.chat({
          messages,
          ...(definitions.length > 0 ? { tools: definitions } : {}),
          ...(this.#o.model ? { model: this.#o.model } : {}),
          signal,
        });
      } catch (err) {
        meter.llmCall(undefined);
        if (err instanceof CancelledError || signal.aborted) return { content: '', outcome: 'cancelled' };
        if (hasCode(err, 'CONTEXT_LENGTH_EXCEEDED') && compactions < MAX_COMPACTIONS) {
          compactions += 1;
          run.log.warn({ attempt: compactions }, 'context length exceeded; compacting and retrying');
          if (await this.#compactor.afterContextError(run, compactions)) {
            iteration -= 1;
            last = undefined;
            continue;
          }
        }
        throw err;
      }
      meter.llmCall(response.usage);
      this.#addUsage(req.sessionKey, response.usage);
      last = response.usage ? { ...response.usage, sentMessages: messages.length } : undefined;
      if (response.toolCalls.length === 0) return { content: response.content, outcome: 'ok' };
      const answered = new Map<string, string>();
      for (const hook of hooks) {
        const decision = hook.afterCall?.({ iteration, response, log: run.log }) ?? { action: 'continue' };
        if (decision.action === 'stop') return { content: decision.reply, outcome: 'loop' };
        if (decision.action === 'answer') for (const [id, text] of decision.results) answered.set(id, text);
      }
      await this.#record(run, {
        role: 'assistant',
        content: response.content || null,
        toolCalls: response.toolCalls,
      });
      await this.#runTools(run, response.toolCalls, answered);
      if (signal.aborted) return { content: '', outcome: 'cancelled' };
    }
    return {
      content:
        `I stopped after ${this.#o.maxIterations} steps without finishing. ` +
        'Tell me to continue if you want me to keep going.',
      outcome: 'max_iterations',
    };
  }

  /** Remembers the last user-facing chat (external channels only; not `system` or `cli`). */
  async recordLastChannel(channel: string, chatId: string, threadId?: string): Promise<void> {
    if (!this.#o.state || isInternalChannel(channel) || channel === 'cli') return;
    try {
      await this.#o.state.setLastChannel(channel, chatId, threadId);
    } catch (err) {
      this.#o.logger.warn({ err: describeError(err) }, 'could not record the last channel');
    }
  }

  /**
   * Builds the turn's ToolContext (tools are shared across concurrent
   * sessions, so the chat they act for travels with each call) and tracks
   * whether the message tool already answered the origin chat.
   */
  updateToolContexts(
    req: TurnRequest,
    signal: AbortSignal,
    options: TurnOptions,
    log: Logger,
  ): TurnToolContext {
    return createTurnToolContext({
      req,
      signal,
      sink: options.outbound ?? this.#o.outbound,
      workspace: this.#o.workspace,
      logger: log,
      depth: options.depth ?? 0,
    });
  }

  /**
   * Starts a background summary of the session when it has grown past the
   * budget; one at a time per session; never blocks the reply.
   */
  maybeSummarize(sessionKey: string): void {
    this.#summarizer.schedule(sessionKey);
  }

  /** Resolves when every background summary has finished (the CLI awaits it before exit). */
  async idle(): Promise<void> {
    await this.#summarizer.idle();
  }

  async #request(batch: InboundMessage[], signal?: AbortSignal): Promise<TurnRequest> {
    const lead = batch.find((m) => !isInternalChannel(m.channel))!;
    const last = batch.at(-1)!;
    return {
      sessionKey: sessionKeyOf(lead),
      channel: lead.channel,
      chatId: lead.chatId,
      ...(lead.threadId ? { threadId: lead.threadId } : {}),
      ...(last.platformMessageId ? { replyTo: last.platformMessageId } : {}),
      ...(lead.senderName ? { senderName: lead.senderName } : {}),
      isGroup: lead.isGroup,
      user: await this.#userMessages(batch, signal),
      ids: batch.map((m) => m.id),
      recordChannel: true,
    };
  }

  /** Converts inbound messages; system ones are framed as background task results. */
  async #userMessages(batch: InboundMessage[], signal?: AbortSignal): Promise<UserTurnMessage[]> {
    const framed = batch.map((m) => (isInternalChannel(m.channel) ? frameBackgroundResult(m) : m));
    return toUserMessages(framed, {
      provider: this.#o.provider,
      transcribe: this.#o.transcribe ?? false,
      logger: this.#o.logger,
      ...(signal ? { signal } : {}),
    });
  }

  #promptSession(run: TurnRun): PromptSession {
    const { req } = run;
    return {
      channel: req.channel,
      chatId: req.chatId,
      sessionKey: req.sessionKey,
      ...(run.summary ? { summary: run.summary } : {}),
      ...(req.senderName ? { senderName: req.senderName } : {}),
      ...(req.isGroup ? { isGroup: true } : {}),
    };
  }

  /** Appends messages to the turn and (as they happen) to the session. */
  async #record(run: TurnRun, ...messages: ChatMessage[]): Promise<void> {
    run.turn.push(...messages);
    await this.#o.sessions.append(run.req.sessionKey, ...messages);
  }

  /** Runs the calls (those a hook answered get its text instead) and records the results in call order. */
  async #runTools(run: TurnRun, calls: ToolCall[], answered: ReadonlyMap<string, string>): Promise<void> {
    const ran = await runToolBatch(
      calls.filter((c) => !answered.has(c.id)),
      {
        tools: this.#o.tools,
        ctx: run.toolCtx,
        meter: run.meter,
        cancelled: run.cancelled,
        onUserText: run.sendUserText,
      },
    );
    const results = calls.map((call): ChatMessage => {
      const note = answered.get(call.id);
      if (note !== undefined) return { role: 'tool', toolCallId: call.id, name: call.name, content: note };
      return ran.shift()!;
    });
    await this.#record(run, ...results);
  }

  /** The messages of the next call: context, history and the turn, then each hook's `beforeCall`. */
  async #prepareRequest(run: TurnRun, hooks: IterationHook[], iteration: number): Promise<ChatMessage[]> {
    let messages = await this.#o.context.buildMessages({
      history: run.history,
      session: this.#promptSession(run),
      current: run.turn,
    });
    for (const hook of hooks) {
      if (hook.beforeCall) messages = hook.beforeCall({ iteration, messages, log: run.log });
    }
    return messages;
  }

  async #drainPending(run: TurnRun): Promise<void> {
    const pending = (await run.options.drainPending?.()) ?? [];
    if (pending.length === 0) return;
    const user = await this.#userMessages(pending, run.signal);
    const ids = pending.map((m) => m.id);
    run.req.ids.push(...ids);
    await this.#addUser(run, user, ids);
  }

  /**
   * Appends user messages to the session (tagged with their inbound ids) and to
   * the turn. A redone turn (a retried or crashed job) finds its messages
   * already in the history: they are not stored or sent twice.
   */
  async #addUser(run: TurnRun, user: UserTurnMessage[], ids: readonly string[]): Promise<void> {
    const logged = new Set(run.history.map(inboundIdOf).filter((id) => id !== undefined));
    const fresh = user.flatMap((u, i) => {
      const inboundId = ids[i];
      if (inboundId !== undefined && logged.has(inboundId)) return [];
      if (inboundId !== undefined) logged.add(inboundId);
      return [
        { forModel: u.forModel, forLog: inboundId === undefined ? u.forLog : { ...u.forLog, inboundId } },
      ];
    });
    if (fresh.length < user.length)
      run.log.info({ redone: user.length - fresh.length }, 'redone turn: messages already stored');
    if (fresh.length === 0) return;
    await this.#o.sessions.append(run.req.sessionKey, ...fresh.map((u) => u.forLog));
    run.turn.push(...fresh.map((u) => u.forModel));
  }

  /** Whether the session as this turn saw it has passed the summary budget (no re-read needed when not). */
  #overBudget(run: TurnRun): boolean {
    const summaryTokens = Math.ceil((run.summary?.length ?? 0) / 4);
    return estimateTokens(run.history) + estimateTokens(run.turn) + summaryTokens > this.#o.summarizeAtTokens;
  }

  #addUsage(key: string, usage: { promptTokens: number; completionTokens: number } | undefined): void {
    if (!usage) return;
    const total = this.#usage.get(key) ?? { promptTokens: 0, completionTokens: 0 };
    total.promptTokens += usage.promptTokens;
    total.completionTokens += usage.completionTokens;
    this.#usage.set(key, total);
  }
}
