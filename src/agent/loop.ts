/**
 * AgentLoop: processMessage → runAgentLoop → runLLMIteration.
 * One turn builds the context, calls the model, runs tools until a plain
 * answer, persists every message as it happens and returns the reply for the
 * caller (worker or CLI) to deliver. Long sessions are summarised afterwards
 * in the background. The iterations live in llm-iteration.ts, the turn's
 * state in turn-run.ts, the requests each entry point builds in turn-request.ts.
 */

import { routeCommand } from '../commands/router.js';
import { AppError, describeError } from '../errors/index.js';
import { positiveWholeNumber } from '../errors/option-checks.js';
import type { Logger } from '../log/index.js';
import { type PendingApproval, resumedTurnId } from '../messages/approval.js';
import type { InboundMessage } from '../messages/messages.js';
import { isInternalChannel, sessionKeyOf } from '../messages/messages.js';
import type { TokenCounts } from '../messages/token-counts.js';
import type { ChatMessage, ToolCall } from '../providers/types.js';
import { TurnCompactor } from './compactor.js';
import { defaultHooks } from './hooks/default-hooks.js';
import {
  type IterationDeps,
  type IterationResult,
  resumeIterations,
  runIterations,
} from './llm-iteration.js';
import type { AgentLoopOptions } from './loop-options.js';
import { MemoryModelChoiceStore } from './model-command.js';
import { contextLimitFor } from './model-limits.js';
import { runSlashCommand } from './slash-commands.js';
import { SessionSummarizer } from './summarizer.js';
import { toolCallLimits } from './tool-call-limits.js';
import { createTurnToolContext } from './tool-context.js';
import { logTurn, TurnMeter } from './turn-metrics.js';
import { TurnModels } from './turn-models.js';
import {
  directMessage,
  frameBackgroundResult,
  heartbeatRequest,
  inboundRequest,
  originOf,
  originRequest,
  type TurnRequest,
  targetOf,
  targetOfRequest,
} from './turn-request.js';
import { STOPPED_REPLY, TurnRun } from './turn-run.js';
import type { AgentRunner, ParkedDecision, StoredAnswer, TurnOptions, TurnResult } from './types.js';
import { toUserMessages, type UserTurnMessage } from './user-content.js';

export type { AgentLoopOptions, LoopContextBuilder, PromptSession } from './loop-options.js';
export type { LoopTools } from './tool-batch.js';
export type { TurnRequest } from './turn-request.js';
export { contextFullReply, STOPPED_REPLY, type TurnRun } from './turn-run.js';

/** The agent core. Shared by every session; all per-turn state lives in the turn. */
export class AgentLoop implements AgentRunner {
  readonly #o: Required<
    Pick<AgentLoopOptions, 'maxIterations' | 'keepLastMessages' | 'hooks' | 'contextTokens'>
  > &
    AgentLoopOptions & { summarizeAtTokens: number };
  readonly #summarizer: SessionSummarizer;
  readonly #compactor: TurnCompactor;
  readonly #iteration: IterationDeps;
  readonly #models: TurnModels;

  constructor(options: AgentLoopOptions) {
    const maxIterations = positiveWholeNumber('maxIterations', options.maxIterations ?? 20);
    const contextTokens = contextLimitFor(options.model ?? options.provider.model, options.contextTokens);
    this.#o = {
      ...options,
      contextTokens,
      hooks: options.hooks ?? defaultHooks,
      maxIterations,
      keepLastMessages: options.keepLastMessages ?? 8,
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
    this.#models = new TurnModels({
      provider: options.provider,
      choices: options.modelChoices ?? new MemoryModelChoiceStore(),
      defaultModel: options.model ?? options.provider.model,
      defaultWindow: contextTokens,
    });
    this.#iteration = {
      provider: options.provider,
      tools: options.tools,
      context: options.context,
      hooks: this.#o.hooks,
      compactor: this.#compactor,
      maxIterations,
      windowFor: (model) => this.#models.windowFor(model),
      toolCallLimits: toolCallLimits(options.toolCallLimits),
      ...(options.model ? { model: options.model } : {}),
      userMessages: (batch, signal) => this.#userMessages(batch, signal),
    };
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
    const routed = first.media.length === 0 ? routeCommand(first.content) : undefined;
    if (!routed || routed.runs === 'text' || isInternalChannel(first.channel)) {
      const user = await this.#userMessages(batch, options.signal);
      return this.runAgentLoop(inboundRequest(batch, user), options);
    }
    const key = sessionKeyOf(first);
    const meter = new TurnMeter(key);
    // A summary finishing after /new would mark the fresh session's first messages as summarised.
    const { command } = routed;
    if (command.name === 'new') await this.#summarizer.settled(key);
    const reply = await runSlashCommand(routed, {
      sessionKey: key,
      sessions: this.#o.sessions,
      model: this.model,
      models: this.#models.commandContext(),
      ...(command.argument ? { argument: command.argument } : {}),
      ...(this.#o.prices ? { prices: this.#o.prices } : {}),
      ...(this.#o.usage ? { usage: this.#o.usage } : {}),
      ...(this.#o.forget ? { forget: this.#o.forget } : {}),
      ...(this.#o.voice ? { voice: this.#o.voice } : {}),
      ...(this.#o.approvalRules
        ? { approvalRules: this.#o.approvalRules, chatKey: `${first.channel}:${first.chatId}` }
        : {}),
    });
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
    return this.runAgentLoop(originRequest(o, batch, user), options);
  }

  async processDirect(content: string, sessionKey: string, options: TurnOptions = {}): Promise<TurnResult> {
    return this.processMessage([directMessage(content, sessionKey)], options);
  }

  /** A heartbeat turn: session `heartbeat`, no history; its chat is the last active one. */
  async processHeartbeat(prompt: string, options: TurnOptions = {}): Promise<TurnResult> {
    const last = await this.#o.state?.getLastChannel();
    return this.runAgentLoop(heartbeatRequest(prompt, last), options);
  }

  /** One full turn: context, the model and tools, persistence, metrics. */
  async runAgentLoop(req: TurnRequest, options: TurnOptions = {}): Promise<TurnResult> {
    const meter = new TurnMeter(req.sessionKey);
    const log = this.#o.logger.child({ session: req.sessionKey });
    let run: TurnRun | undefined;
    try {
      run = await this.#startRun(req, options, meter, log);
      await run.addUser(req.user, req.ids, this.#o.context);
      const stored = run.storedAnswers();
      const answered = new Set(stored.flatMap((a) => a.ids));
      const unanswered = req.ids.find((id) => !answered.has(id));
      if (unanswered === undefined && stored.length > 0) return this.#storedRun(run, stored);
      if (stored.length > 0 && unanswered !== undefined) run.answering(unanswered);
      const result = await this.#finishRun(run, await this.runLLMIteration(run));
      if (stored.length === 0) return result;
      return { ...result, stored, ...(unanswered === req.ids[0] ? {} : { answersFrom: unanswered }) };
    } catch (err) {
      logTurn(log, meter.finish('error'));
      throw err;
    } finally {
      run?.dispose();
    }
  }

  /** The turn's state: its tool context, the session's history and summary, the chat's model. */
  async #startRun(req: TurnRequest, options: TurnOptions, meter: TurnMeter, log: Logger): Promise<TurnRun> {
    const signal = options.signal ?? new AbortController().signal;
    // Recorded while the history loads (it never throws: a failure is logged).
    const recording = req.recordChannel
      ? this.recordLastChannel(req.channel, req.chatId, req.threadId)
      : undefined;
    // Tools are shared across concurrent sessions, so the chat they act for travels with each call.
    const { ctx, sentToOrigin, sendUserText, answering } = createTurnToolContext({
      req,
      signal,
      sink: options.outbound ?? this.#o.outbound,
      workspace: this.#o.workspace,
      logger: log,
      depth: options.depth ?? 0,
      ...(options.trace ? { trace: options.trace } : {}),
    });
    const [history, summary] = req.noHistory
      ? [[], undefined]
      : await Promise.all([
          this.#o.sessions.getContextHistory(req.sessionKey),
          this.#o.sessions.getSummary(req.sessionKey),
        ]);
    const [, model] = await Promise.all([recording, this.#models.chosen(req.sessionKey, log)]);
    return new TurnRun(this.#o.sessions, {
      ...{ req, options, signal, meter, log, toolCtx: ctx, sendUserText, sentToOrigin, answering },
      ...{ history, summary },
      ...(model ? { model } : {}),
    });
  }

  /**
   * Goes on with a turn that parked on a question, once it was settled
   * (`decision`): on any worker, after any restart. The session already holds
   * the turn's messages up to the parked call; the turn continues from there.
   */
  async resumeTurn(
    pending: PendingApproval,
    decision: ParkedDecision,
    options: TurnOptions = {},
  ): Promise<TurnResult> {
    const { request } = pending.parked;
    // Its own id: what the resumed turn sends must not share ids with what it sent before it parked.
    const req: TurnRequest = { ...request, user: [], ids: [resumedTurnId(pending)], recordChannel: false };
    const meter = new TurnMeter(req.sessionKey);
    const log = this.#o.logger.child({ session: req.sessionKey, approval: pending.code });
    let run: TurnRun | undefined;
    try {
      run = await this.#startRun(req, options, meter, log);
      run.taint = pending.taint;
      const result = await resumeIterations(run, this.#iteration, {
        call: pending.call,
        decision,
        rest: pending.parked.rest,
        iteration: pending.parked.iteration,
      });
      return await this.#finishRun(run, result);
    } catch (err) {
      logTurn(log, meter.finish('error'));
      throw err;
    } finally {
      run?.dispose();
    }
  }

  /** Records the final message, logs the turn's figures, schedules a summary, and builds the result. */
  async #finishRun(run: TurnRun, ended: IterationResult): Promise<TurnResult> {
    const { content, outcome } = ended;
    const { req, meter, log } = run;
    if (ended.parked) return this.#parkRun(run, ended.parked);
    const text = outcome === 'cancelled' ? STOPPED_REPLY : content;
    // The turn's tokens ride on its final message, so /status can sum a conversation from its log
    // (and say which model gave the last answer).
    const final: ChatMessage & { usage?: TokenCounts; model?: string } = {
      role: 'assistant',
      content: text,
      ...(meter.reported ? { usage: meter.counts() } : {}),
      ...(meter.model ? { model: meter.model } : {}),
    };
    // A silent turn (the message tool answered the chat) may end with nothing more to say. A
    // limit's line is the chat's notice, not the model's words: the session does not keep it.
    if (text !== '' && outcome !== 'budget') await run.record(final);
    const metrics = meter.finish(outcome);
    logTurn(log, metrics);
    // Starts a background summary once the session has outgrown the budget; never blocks the reply.
    if (!req.noHistory && outcome !== 'cancelled' && run.overSummaryBudget(this.#o.summarizeAtTokens))
      this.#summarizer.schedule(req.sessionKey);
    const silent = outcome === 'ok' && run.sentToOrigin();
    return {
      sessionKey: req.sessionKey,
      reply: silent ? undefined : text,
      target: targetOfRequest(req),
      metrics,
    };
  }

  /**
   * A redone turn whose messages the session holds answered already: the stored answers again
   * (the last as the reply), nothing stored, no model call.
   */
  #storedRun(run: TurnRun, stored: StoredAnswer[]): TurnResult {
    const { req, meter, log } = run;
    log.info({ answers: stored.length }, 'redone turn: answer already stored; sent again');
    const metrics = meter.finish('ok');
    logTurn(log, metrics);
    const last = stored.at(-1)!;
    return {
      sessionKey: req.sessionKey,
      reply: last.content,
      target: targetOfRequest(req),
      metrics,
      ...(stored.length > 1 ? { stored: stored.slice(0, -1) } : {}),
      ...(last.ids[0] === req.ids[0] ? {} : { answersFrom: last.ids[0] }),
    };
  }

  /** A turn that ends waiting for a person: nothing is replied; the result carries the question. */
  #parkRun(run: TurnRun, parked: NonNullable<IterationResult['parked']>): TurnResult {
    const { req, meter, log } = run;
    const [first, ...rest] = parked.calls;
    const metrics = meter.finish('waiting');
    logTurn(log, metrics);
    const plain = (c: ToolCall) => ({ id: c.id, name: c.name, arguments: c.arguments });
    return {
      sessionKey: req.sessionKey,
      reply: undefined,
      target: targetOfRequest(req),
      metrics,
      parked: {
        call: plain(first!.call),
        summary: first!.verdict.summary,
        ...(first!.verdict.rule ? { rule: first!.verdict.rule } : {}),
        rest: rest.map((p) => plain(p.call)),
        iteration: parked.iteration,
        taint: run.taint,
        request: {
          channel: req.channel,
          chatId: req.chatId,
          ...(req.threadId ? { threadId: req.threadId } : {}),
          sessionKey: req.sessionKey,
          ...(req.senderName ? { senderName: req.senderName } : {}),
          ...(req.isGroup ? { isGroup: true } : {}),
          ids: [...req.ids],
          ...(req.noHistory ? { noHistory: true } : {}),
          ...(req.replyTo ? { replyTo: req.replyTo } : {}),
        },
      },
    };
  }

  /**
   * The back-and-forth with the model: up to maxIterations LLM calls; tool
   * calls run and their results go back; pending messages join between
   * iterations; a context-length error compacts and retries (at most twice).
   */
  async runLLMIteration(run: TurnRun): Promise<IterationResult> {
    return runIterations(run, this.#iteration);
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

  /** Resolves when every background summary has finished (the CLI awaits it before exit). */
  async idle(): Promise<void> {
    await this.#summarizer.idle();
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
}
