/**
 * AgentLoop (seed 003): processMessage → runAgentLoop → runLLMIteration.
 * One turn builds the context, calls the model, runs tools until a plain
 * answer, persists every message as it happens and returns the reply for the
 * caller (worker or CLI) to deliver. Long sessions are summarised afterwards
 * in the background.
 */
import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { InboundMessage } from '../bus/messages.js';
import { isInternalChannel, sessionKeyOf } from '../bus/messages.js';
import { AppError, CancelledError, describeError, hasCode } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import type { ChatMessage, LLMProvider, ToolCall } from '../providers/types.js';
import type { SessionStore } from '../sessions/types.js';
import type { ToolContext } from '../tools/types.js';
import type { OutboundSink, StateStore } from './ports.js';
import { parseSlashCommand, runSlashCommand, type SessionUsage } from './slash-commands.js';
import { chooseCut, estimateTokens, maybeSummarize, summarizeBatch, summarizeSession } from './summarize.js';
import { type LoopTools, runToolBatch } from './tool-batch.js';
import { logTurn, TurnMeter } from './turn-metrics.js';
import type { AgentRunner, TurnOptions, TurnOutcome, TurnResult } from './types.js';
import { toUserMessages, type UserTurnMessage } from './user-content.js';

export type { LoopTools } from './tool-batch.js';

/** The session facts the system prompt shows (ContextBuilder's SessionInfoForPrompt). */
export interface PromptSession {
  channel: string;
  chatId: string;
  sessionKey: string;
  summary?: string;
  senderName?: string;
  isGroup?: boolean;
}

/** What the loop needs from the ContextBuilder. */
export interface LoopContextBuilder {
  buildMessages(args: {
    history: ChatMessage[];
    session: PromptSession;
    current: ChatMessage[];
  }): Promise<ChatMessage[]>;
}

export interface AgentLoopOptions {
  provider: LLMProvider;
  tools: LoopTools;
  sessions: SessionStore;
  context: LoopContextBuilder;
  logger: Logger;
  /** Where the message tool sends when the turn brings no sink of its own. */
  outbound: OutboundSink;
  /** Records the last user-facing chat (heartbeat replies go there). */
  state?: StateStore;
  /** Absolute, real path of the workspace. */
  workspace: string;
  /** LLM calls per turn. @defaultValue 20 */
  maxIterations?: number;
  /** Overrides the provider's default model. */
  model?: string;
  /** The model's context window in tokens. @defaultValue 32_000 */
  contextTokens?: number;
  /** Summarise when the context history passes this. @defaultValue 60% of contextTokens */
  summarizeAtTokens?: number;
  /** Messages kept verbatim after a summary. @defaultValue 8 */
  keepLastMessages?: number;
  /** The reply when the model's final text is empty. */
  defaultReply?: string;
  /** Transcribe voice through the provider. @defaultValue false */
  transcribe?: boolean;
}

/** Reply sent when a turn is cancelled. */
export const STOPPED_REPLY = 'Stopped.';
const DEFAULT_REPLY = 'Done. I have nothing more to add.';
const MAX_COMPACTIONS = 2;

const OriginSchema = z.object({
  channel: z.string().min(1),
  chatId: z.string().min(1),
  threadId: z.string().min(1).optional(),
  sessionKey: z.string().min(1).optional(),
});

/** One turn's request, whatever its source. */
export interface TurnRequest {
  sessionKey: string;
  channel: string;
  chatId: string;
  threadId?: string;
  replyTo?: string;
  senderName?: string;
  isGroup?: boolean;
  user: UserTurnMessage[];
  /** Ids of the inbound messages (deterministic ids for what the turn sends). */
  ids: string[];
  noHistory?: boolean;
  recordChannel: boolean;
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
  readonly #o: Required<Pick<AgentLoopOptions, 'maxIterations' | 'keepLastMessages' | 'defaultReply'>> &
    AgentLoopOptions & { summarizeAtTokens: number };
  readonly #summaries = new Map<string, Promise<void>>();
  readonly #usage = new Map<string, SessionUsage>();

  constructor(options: AgentLoopOptions) {
    const maxIterations = options.maxIterations ?? 20;
    if (!Number.isInteger(maxIterations) || maxIterations < 1) {
      throw new AppError(
        'CONFIG_INVALID',
        `maxIterations must be a positive whole number, not ${maxIterations}`,
      );
    }
    const contextTokens = options.contextTokens ?? 32_000;
    this.#o = {
      ...options,
      maxIterations,
      keepLastMessages: options.keepLastMessages ?? 8,
      defaultReply: options.defaultReply ?? DEFAULT_REPLY,
      summarizeAtTokens: options.summarizeAtTokens ?? Math.floor(contextTokens * 0.6),
    };
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
    if (command === 'new') await this.#summaries.get(key);
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
    const origin = OriginSchema.safeParse(first.metadata['origin']);
    if (!origin.success) {
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
    const o = origin.data;
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
    const colon = sessionKey.indexOf(':');
    const channel = colon > 0 ? sessionKey.slice(0, colon) : 'cli';
    const chatId = colon > 0 ? sessionKey.slice(colon + 1) : sessionKey;
    const message: InboundMessage = {
      id: `direct:${randomUUID()}`,
      channel,
      chatId: chatId || 'default',
      senderId: '',
      content,
      media: [],
      sessionKey,
      isGroup: false,
      receivedAt: new Date().toISOString(),
      metadata: {},
    };
    return this.processMessage([message], options);
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
      if (req.recordChannel) await this.recordLastChannel(req.channel, req.chatId, req.threadId);
      const { ctx, sentToOrigin, sendUserText } = this.updateToolContexts(req, signal, options, log);
      const [history, summary] = req.noHistory
        ? [[], undefined]
        : await Promise.all([
            this.#o.sessions.getContextHistory(req.sessionKey),
            this.#o.sessions.getSummary(req.sessionKey),
          ]);
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
    let compactions = 0;
    let iteration = 0;
    while (iteration < this.#o.maxIterations) {
      if (signal.aborted) return { content: '', outcome: 'cancelled' };
      if (iteration > 0) await this.#drainPending(run);
      iteration += 1;
      run.options.onIteration?.(iteration);
      const messages = await this.#o.context.buildMessages({
        history: run.history,
        session: this.#promptSession(run),
        current: run.turn,
      });
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
          if (await this.#compact(run, compactions)) {
            iteration -= 1;
            continue;
          }
        }
        throw err;
      }
      meter.llmCall(response.usage);
      this.#addUsage(req.sessionKey, response.usage);
      if (response.toolCalls.length === 0) return { content: response.content, outcome: 'ok' };
      await this.#record(run, {
        role: 'assistant',
        content: response.content || null,
        toolCalls: response.toolCalls,
      });
      await this.#runTools(run, response.toolCalls);
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
  ): { ctx: ToolContext; sentToOrigin: () => boolean; sendUserText: (text: string) => Promise<void> } {
    const sink = options.outbound ?? this.#o.outbound;
    const idBase = `m-${hashIds(req.ids.length > 0 ? req.ids : [randomUUID()])}`;
    let sent = 0;
    let answered = false;
    const ctx: ToolContext = {
      channel: req.channel,
      chatId: req.chatId,
      ...(req.threadId ? { threadId: req.threadId } : {}),
      sessionKey: req.sessionKey,
      workspace: this.#o.workspace,
      signal,
      logger: log,
      depth: 0,
      send: async (message) => {
        sent += 1;
        await sink.publish({ ...message, id: `${idBase}-${sent}` });
        const sameThread = (message.threadId ?? undefined) === req.threadId;
        if (message.channel === req.channel && message.chatId === req.chatId && sameThread) answered = true;
      },
    };
    let shown = 0;
    const sendUserText = async (text: string) => {
      shown += 1;
      await sink.publish({
        id: `${idBase}-u${shown}`,
        ...targetOfRequest(req),
        content: text,
        kind: 'message',
      });
    };
    return { ctx, sentToOrigin: () => answered, sendUserText };
  }

  /**
   * Starts a background summary of the session when it has grown past the
   * budget; one at a time per session; never blocks the reply.
   */
  maybeSummarize(sessionKey: string): void {
    if (this.#summaries.has(sessionKey)) return;
    const task = maybeSummarize({
      ...this.#summaryOptions(sessionKey),
      budgetTokens: this.#o.summarizeAtTokens,
    })
      .then(() => undefined)
      .catch((err: unknown) => {
        this.#o.logger.warn({ session: sessionKey, err: describeError(err) }, 'background summary failed');
      })
      .finally(() => this.#summaries.delete(sessionKey));
    this.#summaries.set(sessionKey, task);
  }

  /** Resolves when every background summary has finished (the CLI awaits it before exit). */
  async idle(): Promise<void> {
    while (this.#summaries.size > 0) await Promise.all(this.#summaries.values());
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
    const framed = batch.map((m) =>
      isInternalChannel(m.channel)
        ? {
            ...m,
            content: `[background task result] ${m.content}\n\nTell the user what came of it, in your own words.`,
          }
        : m,
    );
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

  async #runTools(run: TurnRun, calls: ToolCall[]): Promise<void> {
    const results = await runToolBatch(calls, {
      tools: this.#o.tools,
      ctx: run.toolCtx,
      meter: run.meter,
      cancelled: run.cancelled,
      onUserText: run.sendUserText,
    });
    await this.#record(run, ...results);
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

  /**
   * Forced compaction after a context-length error, keeping fewer messages on
   * each attempt (4, then 2). False when nothing could be shrunk.
   */
  async #compact(run: TurnRun, attempt: number): Promise<boolean> {
    const keep = Math.max(1, Math.floor(Math.min(this.#o.keepLastMessages, 4) / 2 ** (attempt - 1)));
    if (run.req.noHistory) {
      const cut = chooseCut(run.turn, keep);
      if (cut === 0) return false;
      run.summary = await summarizeBatch(
        this.#o.provider,
        run.turn.slice(0, cut),
        run.summary,
        this.#modelOption(),
      );
      run.turn = run.turn.slice(cut);
      return true;
    }
    const key = run.req.sessionKey;
    await this.#summaries.get(key);
    const done = await summarizeSession({
      ...this.#summaryOptions(key),
      keepLastMessages: keep,
      signal: run.signal,
    });
    if (!done) return false;
    [run.history, run.summary] = await Promise.all([
      this.#o.sessions.getContextHistory(key),
      this.#o.sessions.getSummary(key),
    ]);
    run.turn = [];
    return true;
  }

  /** Whether the session as this turn saw it has passed the summary budget (no re-read needed when not). */
  #overBudget(run: TurnRun): boolean {
    const summaryTokens = Math.ceil((run.summary?.length ?? 0) / 4);
    return estimateTokens(run.history) + estimateTokens(run.turn) + summaryTokens > this.#o.summarizeAtTokens;
  }

  #summaryOptions(key: string) {
    return {
      sessions: this.#o.sessions,
      provider: this.#o.provider,
      key,
      logger: this.#o.logger,
      keepLastMessages: this.#o.keepLastMessages,
      batchTokens: Math.max(1_000, Math.floor(this.#o.summarizeAtTokens / 2)),
      ...this.#modelOption(),
    };
  }

  #modelOption(): { model?: string } {
    return this.#o.model ? { model: this.#o.model } : {};
  }

  #addUsage(key: string, usage: { promptTokens: number; completionTokens: number } | undefined): void {
    if (!usage) return;
    const total = this.#usage.get(key) ?? { promptTokens: 0, completionTokens: 0 };
    total.promptTokens += usage.promptTokens;
    total.completionTokens += usage.completionTokens;
    this.#usage.set(key, total);
  }
}

function targetOf(m: InboundMessage): TurnResult['target'] {
  return {
    channel: m.channel,
    chatId: m.chatId,
    ...(m.threadId ? { threadId: m.threadId } : {}),
    ...(m.platformMessageId ? { replyTo: m.platformMessageId } : {}),
  };
}

function targetOfRequest(req: TurnRequest): TurnResult['target'] {
  return {
    channel: req.channel,
    chatId: req.chatId,
    ...(req.threadId ? { threadId: req.threadId } : {}),
    ...(req.replyTo ? { replyTo: req.replyTo } : {}),
  };
}

/** The inbound message id a stored user message was tagged with. */
function inboundIdOf(entry: ChatMessage): string | undefined {
  const id = (entry as { inboundId?: unknown }).inboundId;
  return typeof id === 'string' ? id : undefined;
}

function hashIds(ids: string[]): string {
  return createHash('sha256').update(ids.join('\n')).digest('hex').slice(0, 16);
}
