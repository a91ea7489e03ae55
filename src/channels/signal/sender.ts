/**
 * Sends one OutboundMessage through signal-cli's `send`: the Markdown split
 * under SIGNAL_TEXT_LIMIT characters (fences closed and reopened, chunk.ts),
 * each part turned into plain text with style ranges (styles.ts) and sent in
 * order, to the person (`recipient`) or the group (`groupId`). In a group the
 * first part quotes the message it answers (`quoteTimestamp`, `quoteAuthor`).
 * Signal has no buttons: a message's actions are not drawn, its text already
 * says what to type (`/approve K7QF2`). signal-cli's refusals no retry can fix
 * (an unknown recipient, an untrusted key) are DELIVERY_PERMANENT; its I/O
 * errors, Signal's rate limit and an unreachable daemon DELIVERY_TRANSIENT.
 * A spoken reply goes as an OGG/Opus attachment (a data URI, {@link deliverVoice}).
 *
 * Replies are sent whole (no live edits): signal-cli can edit a sent message
 * (`editTimestamp`), but every edit is a new message on the wire, each
 * device keeps a history of them and Signal caps how many a message may
 * have, so a reply growing by edits would be noisy and could stop growing.
 */
import type { OutboundMessage } from '../../messages/messages.js';
import { splitReply } from '../chunk.js';
import { targetOf } from './inbound.js';
import type { SignalRpc } from './rpc.js';
import { type StyledText, styleArgument, toSignalText } from './styles.js';

/**
 * The longest part magpie sends, in characters of Markdown: Signal shows 2,000 bytes of a
 * message and sends the rest as a "long text" attachment, so parts stay near that.
 */
export const SIGNAL_TEXT_LIMIT = 2000;

/** The final parts of a reply as Signal text (at most MAX_REPLY_PARTS, see chunk.ts). */
export function signalParts(content: string): StyledText[] {
  return splitReply(content, SIGNAL_TEXT_LIMIT).map(toSignalText);
}

/** `send`'s parameters for one part. */
export function sendParams(
  chatId: string,
  part: StyledText,
  quote?: { timestamp: number; author: string },
): Record<string, unknown> {
  return {
    ...targetOf(chatId),
    message: part.text,
    ...(part.styles.length > 0 ? { textStyle: part.styles.map(styleArgument) } : {}),
    ...(quote ? { quoteTimestamp: quote.timestamp, quoteAuthor: quote.author } : {}),
  };
}

/** What a reply to `replyTo` (an inbound `platformMessageId`, `<timestamp>:<author>`) quotes. */
export function quoteOf(replyTo: string | undefined): { timestamp: number; author: string } | undefined {
  const match = /^(\d{1,16}):(.+)$/.exec(replyTo ?? '');
  return match ? { timestamp: Number(match[1]), author: match[2]! } : undefined;
}

/**
 * Sends a spoken reply (OGG/Opus) as an attachment of an empty message: signal-cli's `send` takes it
 * as a data URI (`data:audio/ogg;filename=reply.ogg;base64,…`), so nothing is written to disk here.
 */
export async function deliverVoice(rpc: SignalRpc, chatId: string, ogg: Buffer): Promise<void> {
  await rpc.call('send', {
    ...targetOf(chatId),
    message: '',
    attachments: [`data:audio/ogg;filename=reply.ogg;base64,${ogg.toString('base64')}`],
  });
}

/** Sends every part of `message`, in order, skipping parts `alreadySent` says went out. Returns the parts count. */
export async function deliverMessage(
  rpc: SignalRpc,
  message: OutboundMessage,
  alreadySent = 0,
  onPartSent: (index: number) => void = () => {},
): Promise<number> {
  const parts = signalParts(message.content);
  const quote = message.chatId.startsWith('group-') ? quoteOf(message.replyTo) : undefined;
  for (let index = alreadySent; index < parts.length; index++) {
    await rpc.call('send', sendParams(message.chatId, parts[index]!, index === 0 ? quote : undefined));
    onPartSent(index);
  }
  return parts.length;
}
