/**
 * InboundMessage and OutboundMessage: the zod schemas every process shares.
 * Validated when published and when consumed. No bullmq here, so the agent
 * core can use the types without loading the bus.
 */
import { z } from 'zod';

/** An attachment, already fetched by the channel adapter (size-checked). */
export const MediaSchema = z.object({
  kind: z.enum(['image', 'audio', 'file']),
  mimeType: z.string().default('application/octet-stream'),
  name: z.string().optional(),
  size: z.number().int().nonnegative().optional(),
  /** Image or audio bytes as a data: URL (images reach vision models this way). */
  dataUrl: z.string().optional(),
  /** Transcript of a voice note, when transcription ran. */
  transcript: z.string().optional(),
  /** A note the model should read instead of the content (too large, not transcribed…). */
  note: z.string().optional(),
});
export type Media = z.infer<typeof MediaSchema>;

export const InboundMessageSchema = z.object({
  /** Unique id of this message (platform-derived where possible: `<channel>:<chat>:<message_id>`). */
  id: z.string().min(1),
  /** A registered channel's name (`cli`, `web`, …), or `system` (helper results, no user behind them). */
  channel: z
    .string()
    .min(1)
    .regex(/^[a-z][a-z0-9_-]*$/),
  chatId: z.string().min(1),
  /** Forum topic / thread; part of the session key. */
  threadId: z.string().min(1).optional(),
  senderId: z.string().default(''),
  senderName: z.string().optional(),
  content: z.string(),
  media: z.array(MediaSchema).default([]),
  /** Overrides `<channel>:<chatId>[/<threadId>]`. */
  sessionKey: z.string().min(1).optional(),
  /** Platform message id, used to reply in threads. */
  platformMessageId: z.string().optional(),
  /** True in group chats (the sender's name is shown to the model). */
  isGroup: z.boolean().default(false),
  receivedAt: z.string().default(() => new Date().toISOString()),
  metadata: z.record(z.string(), z.unknown()).default({}),
});
export type InboundMessage = z.infer<typeof InboundMessageSchema>;
export type InboundMessageInput = z.input<typeof InboundMessageSchema>;

/** Buttons one message may carry. */
export const MAX_ACTIONS = 3;

/** A button: its label and the chat command pressing it sends (at most 60 characters, starting with `/`). */
export const OutboundActionSchema = z.object({
  label: z.string().min(1).max(40),
  command: z
    .string()
    .min(2)
    .max(60)
    .regex(/^\/[a-z]+(?: [A-Za-z0-9_-]+)*$/),
});
export type OutboundAction = z.infer<typeof OutboundActionSchema>;

/**
 * Audio a reply carries (a spoken reply: OGG/Opus as a data: URL), with what voice-note
 * players show: its length and a waveform (base64 of 256 loudness bytes, Discord's form).
 */
export const OutboundMediaSchema = MediaSchema.extend({
  durationSeconds: z.number().nonnegative().optional(),
  waveform: z.string().max(400).optional(),
});
export type OutboundMedia = z.infer<typeof OutboundMediaSchema>;

export const OutboundMessageSchema = z.object({
  /** Deterministic id (derived from the inbound ids), so a redone turn cannot post twice. */
  id: z.string().min(1),
  channel: z.string().min(1),
  chatId: z.string().min(1),
  threadId: z.string().min(1).optional(),
  content: z.string(),
  /** Platform message id to reply to. */
  replyTo: z.string().optional(),
  /** `reply` ends a turn (stops typing); `message` is sent mid-turn by the message tool. */
  kind: z.enum(['reply', 'message', 'error']).default('reply'),
  /**
   * The turn whose live preview (bus/live.ts) this message completes: the channel turns the
   * preview into this text in place instead of posting again. Absent: nothing was streamed.
   */
  live: z.string().min(1).optional(),
  /**
   * Buttons under the message (an approval question's "Allow once", "Deny"): each runs `command`
   * (e.g. `/approve K7QF2`) as if the person who pressed it had typed it in that chat. Channels
   * without buttons show the text only, which says what to type.
   */
  actions: z.array(OutboundActionSchema).max(MAX_ACTIONS).optional(),
  /**
   * Audio to send with (or, when `content` is empty, instead of) the text: a spoken reply
   * (src/voice). Channels that cannot play audio are never sent one.
   */
  media: z.array(OutboundMediaSchema).max(1).optional(),
  createdAt: z.string().default(() => new Date().toISOString()),
  metadata: z.record(z.string(), z.unknown()).default({}),
});
export type OutboundMessage = z.infer<typeof OutboundMessageSchema>;
export type OutboundMessageInput = z.input<typeof OutboundMessageSchema>;

/** The session key of a message: `<channel>:<chatId>` plus `/<threadId>` for threads. */
export function sessionKeyOf(
  msg: Pick<InboundMessage, 'channel' | 'chatId' | 'threadId' | 'sessionKey'>,
): string {
  if (msg.sessionKey) return msg.sessionKey;
  return msg.threadId ? `${msg.channel}:${msg.chatId}/${msg.threadId}` : `${msg.channel}:${msg.chatId}`;
}

/** Channels with no human behind them. */
export function isInternalChannel(channel: string): boolean {
  return channel === 'system';
}
