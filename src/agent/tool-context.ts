/**
 * The per-turn ToolContext: the chat the turn belongs to, its signal and a
 * `send` that gives each message its deterministic id (messages/outbound-ids.ts, so
 * a redone turn cannot post twice) and notes whether the origin chat was
 * already answered.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log/index.js';
import { messageId, turnId, userTextId } from '../messages/outbound-ids.js';
import type { ToolContext } from '../tools/types.js';
import type { OutboundSink } from './ports.js';
import { type TurnRequest, targetOfRequest } from './turn-request.js';

export interface TurnToolContext {
  ctx: ToolContext;
  /** True once the message tool sent to the chat the turn answers. */
  sentToOrigin: () => boolean;
  /** Shows a tool result's `forUser` text in the origin chat. */
  sendUserText: (text: string) => Promise<void>;
  /**
   * Names the turn's sends by `firstId`, the first message it answers, when a redone turn found
   * the messages before it answered by an earlier attempt (whose sends hold the head's ids).
   */
  answering: (firstId: string) => void;
}

export interface TurnToolContextOptions {
  req: TurnRequest;
  signal: AbortSignal;
  sink: OutboundSink;
  workspace: string;
  logger: Logger;
  /** Delegation depth (0: a user's turn). @defaultValue 0 */
  depth?: number;
  /** The turn's span, handed on to helpers (TurnOptions.trace). @defaultValue none */
  trace?: ToolContext['trace'];
}

/** Builds the ToolContext of one turn (depth 0 unless a helper runs it). */
export function createTurnToolContext(options: TurnToolContextOptions): TurnToolContext {
  const { req, sink } = options;
  // The first message the turn answers names its sends: the head, unless a redo found earlier
  // messages answered already (`answering`). A heartbeat has none: its sends are not redone.
  let turn = turnId(req.sessionKey, req.ids[0] ?? randomUUID());
  let sent = 0;
  let shown = 0;
  let answered = false;
  const ctx: ToolContext = {
    channel: req.channel,
    chatId: req.chatId,
    ...(req.threadId ? { threadId: req.threadId } : {}),
    sessionKey: req.sessionKey,
    workspace: options.workspace,
    signal: options.signal,
    logger: options.logger,
    ...(options.trace ? { trace: options.trace } : {}),
    depth: options.depth ?? 0,
    send: async (message) => {
      sent += 1;
      await sink.publish({ ...message, id: messageId(turn, sent) });
      const sameThread = (message.threadId ?? undefined) === req.threadId;
      if (message.channel === req.channel && message.chatId === req.chatId && sameThread) answered = true;
    },
  };
  const sendUserText = async (text: string) => {
    shown += 1;
    await sink.publish({
      id: userTextId(turn, shown),
      ...targetOfRequest(req),
      content: text,
      kind: 'message',
    });
  };
  const answering = (firstId: string) => {
    turn = turnId(req.sessionKey, firstId);
  };
  return { ctx, sentToOrigin: () => answered, sendUserText, answering };
}
