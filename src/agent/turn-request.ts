/**
 * What one turn is about, whatever started it (a chat, the CLI, a helper's
 * result on the `system` channel, the heartbeat), and the small pure helpers
 * that address its replies and tag what it stores.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { type InboundMessage, isInternalChannel, sessionKeyOf } from '../messages/messages.js';
import type { ChatMessage } from '../providers/types.js';
import type { TurnResult } from './types.js';
import type { UserTurnMessage } from './user-content.js';

/** One turn's request. */
export interface TurnRequest {
  sessionKey: string;
  channel: string;
  chatId: string;
  threadId?: string;
  replyTo?: string;
  senderName?: string;
  isGroup?: boolean;
  user: UserTurnMessage[];
  /** Ids of the inbound messages, aligned with `user` (deterministic ids for what the turn sends). */
  ids: string[];
  /** Heartbeat turns: no earlier messages are sent. */
  noHistory?: boolean;
  /** Remember this chat as the last active one. */
  recordChannel: boolean;
}

const OriginSchema = z.object({
  channel: z.string().min(1),
  chatId: z.string().min(1),
  threadId: z.string().min(1).optional(),
  sessionKey: z.string().min(1).optional(),
});

/** The chat a `system` message reports to (`metadata.origin`). */
export type Origin = z.infer<typeof OriginSchema>;

/** The origin named in a system message's metadata, or undefined when missing or malformed. */
export function originOf(message: InboundMessage): Origin | undefined {
  const parsed = OriginSchema.safeParse(message.metadata['origin']);
  return parsed.success ? parsed.data : undefined;
}

/** A system message's content as the model reads it: a background task's result to relay. */
export function frameBackgroundResult(message: InboundMessage): InboundMessage {
  return {
    ...message,
    content: `[background task result] ${message.content}\n\nTell the user what came of it, in your own words.`,
  };
}

/**
 * The request of a chat turn: the session, chat and sender of the first
 * message not on the `system` channel; replies answer the last message.
 */
export function inboundRequest(batch: InboundMessage[], user: UserTurnMessage[]): TurnRequest {
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
    user,
    ids: batch.map((m) => m.id),
    recordChannel: true,
  };
}

/** The request of a helper's result: a turn of the origin chat's session, replying there. */
export function originRequest(origin: Origin, batch: InboundMessage[], user: UserTurnMessage[]): TurnRequest {
  return {
    sessionKey: origin.sessionKey ?? sessionKeyOf(origin),
    channel: origin.channel,
    chatId: origin.chatId,
    ...(origin.threadId ? { threadId: origin.threadId } : {}),
    user,
    ids: batch.map((m) => m.id),
    recordChannel: false,
  };
}

/** The request of a heartbeat turn: session `heartbeat`, no history, replying to the last active chat. */
export function heartbeatRequest(
  prompt: string,
  last: { channel: string; chatId: string; threadId?: string } | undefined,
): TurnRequest {
  return {
    sessionKey: 'heartbeat',
    channel: last?.channel ?? 'system',
    chatId: last?.chatId ?? 'heartbeat',
    ...(last?.threadId ? { threadId: last.threadId } : {}),
    user: [{ forModel: { role: 'user', content: prompt }, forLog: { role: 'user', content: prompt } }],
    ids: [],
    noHistory: true,
    recordChannel: false,
  };
}

/** The inbound message for a direct (CLI) request: `cli:default` → channel `cli`, chat `default`. */
export function directMessage(content: string, sessionKey: string): InboundMessage {
  const colon = sessionKey.indexOf(':');
  const channel = colon > 0 ? sessionKey.slice(0, colon) : 'cli';
  const chatId = colon > 0 ? sessionKey.slice(colon + 1) : sessionKey;
  return {
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
}

/** Where a reply to `message` goes. */
export function targetOf(message: InboundMessage): TurnResult['target'] {
  return replyTarget(message.channel, message.chatId, message.threadId, message.platformMessageId);
}

/** Where the reply of a turn goes. */
export function targetOfRequest(req: TurnRequest): TurnResult['target'] {
  return replyTarget(req.channel, req.chatId, req.threadId, req.replyTo);
}

/** A reply's target: the chat, with the thread and the message replied to when there are. */
function replyTarget(
  channel: string,
  chatId: string,
  threadId: string | undefined,
  replyTo: string | undefined,
): TurnResult['target'] {
  return { channel, chatId, ...(threadId ? { threadId } : {}), ...(replyTo ? { replyTo } : {}) };
}

/** The inbound message id a stored user message was tagged with. */
export function inboundIdOf(entry: ChatMessage): string | undefined {
  const id = (entry as { inboundId?: unknown }).inboundId;
  return typeof id === 'string' ? id : undefined;
}
