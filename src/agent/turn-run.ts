/**
 * The state of one running turn and what the loop does to it: record
 * messages as they happen (in the turn and the session), add user messages
 * once (a redone turn does not store them twice), describe the session to
 * the prompt, and tell when the session has outgrown the summary budget.
 */
import type { Logger } from '../log/index.js';
import type { ChatMessage } from '../providers/types.js';
import type { SessionStore } from '../sessions/types.js';
import type { ToolContext } from '../tools/types.js';
import type { LoopContextBuilder, PromptSession } from './loop-options.js';
import { withNote } from './prompt-note.js';
import { estimateTokens } from './summarize.js';
import type { TurnMeter } from './turn-metrics.js';
import { inboundIdOf, type TurnRequest } from './turn-request.js';
import type { TurnOptions } from './types.js';
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
  /** True once the message tool answered the chat this turn belongs to. */
  sentToOrigin: () => boolean;
  /** The model id the chat picked with /model; undefined: the loop's default. */
  model?: string;
  /** Prior history (may include this turn's messages after a compaction), summary, this turn's messages. */
  history: ChatMessage[];
  summary: string | undefined;
  turn: ChatMessage[];
}

/**
 * A promise that resolves when `signal` aborts, and `stop()` to drop the
 * listener once the turn is over (the signal may outlive it).
 */
export function whenAborted(signal: AbortSignal): { cancelled: Promise<void>; stop: () => void } {
  const stopWaiting = new AbortController();
  const cancelled = new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const onAbort = () => resolve();
    signal.addEventListener('abort', onAbort, { once: true });
    stopWaiting.signal.addEventListener('abort', () => signal.removeEventListener('abort', onAbort));
  });
  return { cancelled, stop: () => stopWaiting.abort() };
}

/** Appends messages to the turn and (as they happen) to the session. */
export async function recordInTurn(
  sessions: SessionStore,
  run: TurnRun,
  ...messages: ChatMessage[]
): Promise<void> {
  run.turn.push(...messages);
  await sessions.append(run.req.sessionKey, ...messages);
}

/**
 * Appends user messages to the session (tagged with their inbound ids) and to
 * the turn. The first of them carries the context builder's note (its context
 * block: time, sender, memory written since), stored with it so later
 * requests replay it as sent. A redone turn (a retried or crashed job) finds
 * its messages already in the history: they are not stored or sent twice.
 */
export async function addUserToTurn(
  sessions: SessionStore,
  run: TurnRun,
  user: UserTurnMessage[],
  ids: readonly string[],
  context?: Pick<LoopContextBuilder, 'noteFor'>,
): Promise<void> {
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
  const note = await context?.noteFor?.({
    known: [...run.history, ...run.turn],
    session: promptSessionOf(run),
  });
  if (note) {
    const first = fresh[0]!;
    fresh[0] = { forModel: withNote(first.forModel, note), forLog: withNote(first.forLog, note) };
  }
  await sessions.append(run.req.sessionKey, ...fresh.map((u) => u.forLog));
  run.turn.push(...fresh.map((u) => u.forModel));
}

/** The session facts the system prompt shows for this turn. */
export function promptSessionOf(run: TurnRun): PromptSession {
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

/** Whether the session as this turn saw it has passed the summary budget (no re-read needed when not). */
export function overSummaryBudget(run: TurnRun, summarizeAtTokens: number): boolean {
  const summaryTokens = Math.ceil((run.summary?.length ?? 0) / 4);
  return estimateTokens(run.history) + estimateTokens(run.turn) + summaryTokens > summarizeAtTokens;
}
