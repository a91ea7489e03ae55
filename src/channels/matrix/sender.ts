/**
 * Sends to Matrix: a reply split under MATRIX_TEXT_LIMIT characters of
 * Markdown (fences closed and reopened, chunk.ts), each part an
 * `m.room.message` with its HTML `formatted_body` and the Markdown as plain
 * `body`, into the message's thread when it has one. Each part goes with a
 * transaction id made from the message id and the part's index, so a send
 * retried after a lost answer is taken once by the homeserver. Refusals
 * (403 not in the room, 400 bad event) are DELIVERY_PERMANENT; 429 carries
 * its retry time; anything else is DELIVERY_TRANSIENT. Content passes the
 * outbox's `seal` first, which encrypts it for an encrypted room (crypto.ts).
 * A spoken reply is an `m.audio` voice message in rooms that are not
 * encrypted ({@link deliverVoice}).
 */
import { createHash } from 'node:crypto';
import { type MatrixClient, MatrixError } from 'matrix-js-sdk';
import { AppError, describeError } from '../../errors/index.js';
import type { OutboundMessage } from '../../messages/messages.js';
import type { SpokenAudio } from '../../voice/outbound-audio.js';
import { splitReply } from '../chunk.js';
import { htmlContent } from './format.js';

/**
 * The longest part magpie sends, in characters of Markdown. An event may be
 * 65,536 bytes of JSON; an edit carries the text four times (plain and HTML,
 * old and new content) and HTML escaping can grow it, so 4,000 keeps every
 * event well under the limit.
 */
export const MATRIX_TEXT_LIMIT = 4000;

/** Where a message goes: a room and, when there is one, a thread's root event. */
export interface MatrixTarget {
  chatId: string;
  threadId?: string;
}

/** The content's relation to its thread (clients without threads see it as a reply to the root). */
export function inThread<T extends object>(content: T, target: MatrixTarget): T {
  if (!target.threadId) return content;
  return {
    ...content,
    'm.relates_to': {
      rel_type: 'm.thread',
      event_id: target.threadId,
      is_falling_back: true,
      'm.in_reply_to': { event_id: target.threadId },
    },
  };
}

/** A transaction id for `key` (the same key, the same event on the homeserver). */
export function txnId(key: string): string {
  return `magpie-${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
}

/** How content reaches a room: the client, and the seal that encrypts it when the room is encrypted. */
export interface MatrixOutbox {
  client: MatrixClient;
  seal(
    roomId: string,
    type: string,
    content: Record<string, unknown>,
  ): Promise<{ type: string; content: Record<string, unknown> }>;
  /** Whether the room is end-to-end encrypted. */
  encrypted(roomId: string): Promise<boolean>;
}

/** Whether the room has `m.room.encryption` state (when magpie has no crypto of its own to ask). */
export async function hasEncryptionState(client: MatrixClient, roomId: string): Promise<boolean> {
  try {
    await client.getStateEvent(roomId, 'm.room.encryption', '');
    return true;
  } catch (err) {
    if (err instanceof MatrixError && err.errcode === 'M_NOT_FOUND') return false;
    throw toDeliveryError(err, roomId);
  }
}

/**
 * Sends a spoken reply as an `m.audio` voice message: the OGG/Opus uploaded to the media repository,
 * then an `m.room.message` naming its mxc:// URI with `info` (audio/ogg, size, duration in ms) and
 * the voice-message marks (MSC3245, MSC1767 duration) clients draw as a voice note. In an encrypted
 * room it sends nothing and resolves false: the media repository would hold the audio in the clear,
 * and magpie does not make encrypted attachments.
 */
export async function deliverVoice(
  out: MatrixOutbox,
  message: OutboundMessage,
  audio: Pick<SpokenAudio, 'bytes' | 'durationSeconds'>,
): Promise<boolean> {
  if (await out.encrypted(message.chatId)) return false;
  let url: string;
  try {
    url = (await out.client.uploadContent(audio.bytes, { type: 'audio/ogg', name: 'reply.ogg' })).content_uri;
  } catch (err) {
    throw toDeliveryError(err, message.chatId);
  }
  const duration = Math.round(audio.durationSeconds * 1000);
  const content = {
    msgtype: 'm.audio',
    body: 'reply.ogg',
    url,
    info: { mimetype: 'audio/ogg', size: audio.bytes.length, duration },
    'org.matrix.msc1767.audio': { duration },
    'org.matrix.msc3245.voice': {},
  };
  await sendContent(out, message, inThread(content, message), `${message.id}:voice`);
  return true;
}

/** Sends an `m.room.message`'s content (sealed first); resolves with its event id. */
export async function sendContent(
  out: MatrixOutbox,
  target: MatrixTarget,
  content: Record<string, unknown>,
  key: string,
): Promise<string> {
  try {
    const sealed = await out.seal(target.chatId, 'm.room.message', content);
    const res = await out.client.sendEvent(
      target.chatId,
      sealed.type as never,
      sealed.content as never,
      txnId(key),
    );
    return res.event_id;
  } catch (err) {
    throw toDeliveryError(err, target.chatId);
  }
}

/** Sends every part of `message` in order, skipping parts `alreadySent` says went out. Returns the parts' count. */
export async function deliverMessage(
  out: MatrixOutbox,
  message: OutboundMessage,
  alreadySent = 0,
  onPartSent: (index: number) => void = () => {},
): Promise<number> {
  const parts = splitReply(message.content, MATRIX_TEXT_LIMIT);
  for (let index = alreadySent; index < parts.length; index++) {
    await sendContent(out, message, inThread(htmlContent(parts[index]!), message), `${message.id}:${index}`);
    onPartSent(index);
  }
  return parts.length;
}

/** Classifies a client-server API failure (by status and errcode, not text). */
export function toDeliveryError(err: unknown, room: string): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof MatrixError) {
    const status = err.httpStatus ?? 0;
    if (status === 429 || err.errcode === 'M_LIMIT_EXCEEDED') {
      const retryAfterMs = Math.max(0, Number(err.data['retry_after_ms'] ?? 1000));
      return new AppError(
        'DELIVERY_TRANSIENT',
        `matrix rate-limited room ${room} (retry in ${retryAfterMs} ms)`,
        {
          cause: err,
          transient: true,
          retryAfterMs,
        },
      );
    }
    const permanent = status >= 400 && status < 500;
    return new AppError(
      permanent ? 'DELIVERY_PERMANENT' : 'DELIVERY_TRANSIENT',
      `matrix refused the message for room ${room}: ${err.errcode ?? status}`,
      { cause: err, transient: !permanent },
    );
  }
  return new AppError('DELIVERY_TRANSIENT', `matrix send failed for room ${room}: ${describeError(err)}`, {
    cause: err,
    transient: true,
  });
}
