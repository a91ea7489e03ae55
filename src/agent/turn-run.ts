/**
 * The state of one running turn (TurnRun) and what the loop does to it:
 * record messages as they happen (in the turn and the session), add user
 * messages once (a redone turn does not store them twice), describe the
 * session to the prompt, and tell when the session has outgrown the summary
 * budget.
 */
import { AppError } from '../errors/index.js';
import { type AbortWait, whenAborted } from '../lifecycle/when-aborted.js';
import type { Logger } from '../log/index.js';
import type { ChatMessage } from '../providers/types.js';
import type { SessionStore } from '../sessions/types.js';
import type { ToolContext } from '../tools/types.js';
import type { LoopContextBuilder, PromptSession } from './loop-options.js';
import { withNote } from './prompt-note.js';
import { estimateTokens } from './summarize.js';
import type { TurnMeter } from './turn-metrics.js';
import { inboundIdOf, type TurnRequest } from './turn-request.js';
import type { StoredAnswer, TurnOptions } from './types.js';
import type { UserTurnMessage } from './user-content.js';

/** Reply sent when a turn is cancelled. */
export const STOPPED_REPLY = 'Stopped.';

/** The reply when the conversation does not fit the model's window even after compaction. */
export function contextFullReply(tokens: number, limit: number): string {
  return (
    `This conversation no longer fits in the model's context window (about ${tokens} of ${limit} tokens, ` +
    'even after compacting older messages). Send /new to start a fresh session.'
  );
}

/** What a turn starts with; the rest of its state it builds as it runs. */
export interface TurnRunInit {
  req: TurnRequest;
  options: TurnOptions;
  signal: AbortSignal;
  meter: TurnMeter;
  log: Logger;
  toolCtx: ToolContext;
  /** Shows a tool result's `forUser` text in the origin chat. */
  sendUserText: (text: string) => Promise<void>;
  /** True once the message tool answered the chat this turn belongs to. */
  sentToOrigin: () => boolean;
  /** Names the turn's sends by the first message it answers (tool-context.ts). */
  answering: (firstId: string) => void;
  /** The model id the chat picked with /model; undefined: the loop's default. */
  model?: string;
  history: ChatMessage[];
  summary: string | undefined;
}

/**
 * One running turn: what it was asked, how far it got, and the session it
 * writes to. Messages are recorded as they happen, in the turn and the
 * session. `dispose()` when the turn is over.
 */
export class TurnRun {
  readonly req: TurnRequest;
  readonly options: TurnOptions;
  readonly signal: AbortSignal;
  /** Resolves when the turn is cancelled. */
  readonly cancelled: Promise<void>;
  readonly meter: TurnMeter;
  readonly log: Logger;
  readonly toolCtx: ToolContext;
  readonly sendUserText: (text: string) => Promise<void>;
  readonly sentToOrigin: () => boolean;
  readonly answering: (firstId: string) => void;
  readonly model: string | undefined;
  /** Prior history (may include this turn's messages after a compaction). */
  history: ChatMessage[];
  summary: string | undefined;
  /** This turn's messages, as the next request sends them. */
  turn: ChatMessage[] = [];
  /** The untrusted text the turn read ("a web page"), once it read any: risky calls then always ask. */
  taint: string | undefined;
  readonly #sessions: SessionStore;
  readonly #abortWait: AbortWait;

  constructor(sessions: SessionStore, init: TurnRunInit) {
    this.#sessions = sessions;
    this.req = init.req;
    this.options = init.options;
    this.signal = init.signal;
    this.meter = init.meter;
    this.log = init.log;
    this.toolCtx = init.toolCtx;
    this.sendUserText = init.sendUserText;
    this.sentToOrigin = init.sentToOrigin;
    this.answering = init.answering;
    this.model = init.model;
    this.history = init.history;
    this.summary = init.summary;
    this.#abortWait = whenAborted(init.signal);
    this.cancelled = this.#abortWait.aborted;
  }

  /** Appends messages to the turn and (as they happen) to the session. */
  async record(...messages: ChatMessage[]): Promise<void> {
    await this.#write(async () => {
      this.turn.push(...messages);
      await this.#sessions.append(this.req.sessionKey, ...messages);
    });
  }

  /** Runs a session write. @throws AppError CANCELLED when a later attempt of this turn has taken it over (TurnOptions.answering). */
  async #write(write: () => Promise<void>): Promise<void> {
    const answering = this.options.answering;
    if (!answering) return write();
    if (!(await answering(write))) {
      throw new AppError(
        'CANCELLED',
        'a later attempt of this turn took it over; this one stops without writing',
      );
    }
  }

  /**
   * Appends user messages to the session (tagged with their inbound ids) and
   * to the turn. The first of them carries the context builder's note (its
   * context block: time, sender, memory written since), stored with it so
   * later requests replay it as sent. A redone turn (a retried or crashed
   * job) finds its messages already in the history: they are not stored or
   * sent twice.
   */
  async addUser(
    user: UserTurnMessage[],
    ids: readonly string[],
    context?: Pick<LoopContextBuilder, 'noteFor'>,
  ): Promise<void> {
    const logged = new Set(this.history.map(inboundIdOf).filter((id) => id !== undefined));
    const fresh = user.flatMap((u, i) => {
      const inboundId = ids[i];
      if (inboundId !== undefined && logged.has(inboundId)) return [];
      if (inboundId !== undefined) logged.add(inboundId);
      return [
        { forModel: u.forModel, forLog: inboundId === undefined ? u.forLog : { ...u.forLog, inboundId } },
      ];
    });
    if (fresh.length < user.length)
      this.log.info({ redone: user.length - fresh.length }, 'redone turn: messages already stored');
    if (fresh.length === 0) return;
    const note = await context?.noteFor?.({
      known: [...this.history, ...this.turn],
      session: this.promptSession,
    });
    if (note) {
      const first = fresh[0]!;
      fresh[0] = { forModel: withNote(first.forModel, note), forLog: withNote(first.forLog, note) };
    }
    await this.#write(async () => {
      await this.#sessions.append(this.req.sessionKey, ...fresh.map((u) => u.forLog));
      this.turn.push(...fresh.map((u) => u.forModel));
    });
  }

  /**
   * What an earlier attempt of this turn (a retried or crashed job) already
   * answered: each run of this turn's messages in the stored history with the
   * final answer that followed it, in order. The earlier attempt's worker died
   * (or its reply could not be queued) after storing them; asking the model
   * again would answer "nothing new", and the stored answers would never reach
   * the chat. Messages not stored yet, or stored without an answer after them,
   * are in none.
   */
  storedAnswers(): StoredAnswer[] {
    const ids = new Set(this.req.ids);
    const answers: StoredAnswer[] = [];
    let waiting: string[] = [];
    for (const message of this.history) {
      const inboundId = inboundIdOf(message);
      if (message.role === 'user') {
        if (inboundId !== undefined && ids.has(inboundId)) waiting.push(inboundId);
        continue;
      }
      if (waiting.length === 0 || message.role !== 'assistant') continue;
      if (typeof message.content !== 'string' || message.content === '') continue;
      if ('toolCalls' in message && message.toolCalls?.length) continue;
      answers.push({ ids: waiting, content: message.content });
      waiting = [];
    }
    return answers;
  }

  /** The session facts the system prompt shows for this turn. */
  get promptSession(): PromptSession {
    const { req } = this;
    return {
      channel: req.channel,
      chatId: req.chatId,
      sessionKey: req.sessionKey,
      ...(this.summary ? { summary: this.summary } : {}),
      ...(req.senderName ? { senderName: req.senderName } : {}),
      ...(req.isGroup ? { isGroup: true } : {}),
    };
  }

  /** Whether the session as this turn saw it has passed the summary budget (no re-read needed when not). */
  overSummaryBudget(summarizeAtTokens: number): boolean {
    const summaryTokens = Math.ceil((this.summary?.length ?? 0) / 4);
    return estimateTokens(this.history) + estimateTokens(this.turn) + summaryTokens > summarizeAtTokens;
  }

  /** Stops listening to the signal (it may outlive the turn). */
  dispose(): void {
    this.#abortWait.dispose();
  }
}
