/**
 * Sends one OutboundMessage to Discord: Markdown passes through, split under 2000
 * characters into parts sent in order. discord.js REST waits out 429s (retry_after);
 * each part carries a deterministic nonce with `enforce_nonce`, so a retried send
 * cannot post the same part twice. Errors become DELIVERY_PERMANENT / DELIVERY_TRANSIENT.
 * A message's actions are a row of buttons under its last part.
 */
import { createHash } from 'node:crypto';
import { DiscordAPIError, HTTPError, RateLimitError, type REST, Routes } from 'discord.js';
import { AppError, describeError } from '../../errors/index.js';
import type { OutboundMessage } from '../../messages/messages.js';
import { splitReply } from '../chunk.js';
import { buttonsBody } from './buttons.js';

/** Discord's message length limit. */
export const DISCORD_MESSAGE_LIMIT = 2000;

/** JSON error codes that no retry can fix (unknown channel, missing access, cannot DM the user…). */
const PERMANENT_CODES = new Set([10003, 10013, 50001, 50007, 50013, 50035, 50006, 40005]);

/** The Discord channel a message goes to: the thread when there is one. */
export function targetChannelId(message: Pick<OutboundMessage, 'chatId' | 'threadId'>): string {
  return message.threadId ?? message.chatId;
}

/** Parts of `content` as they will be sent (at most MAX_REPLY_PARTS, see chunk.ts). */
export function discordParts(content: string): string[] {
  return splitReply(content, DISCORD_MESSAGE_LIMIT);
}

/** Posts every part of `message`, in order, skipping parts `alreadySent` says went out. Returns the parts count. */
export async function deliverMessage(
  rest: REST,
  message: OutboundMessage,
  alreadySent = 0,
  onPartSent: (index: number) => void = () => {},
): Promise<number> {
  const channelId = targetChannelId(message);
  const parts = discordParts(message.content);
  for (let index = alreadySent; index < parts.length; index++) {
    const body: Record<string, unknown> = {
      content: parts[index],
      nonce: nonceFor(message.id, index),
      enforce_nonce: true,
      allowed_mentions: { parse: [], replied_user: false },
      ...buttonsBody(index === parts.length - 1 ? message.actions : undefined),
    };
    if (index === 0 && message.replyTo) {
      body['message_reference'] = { message_id: message.replyTo, fail_if_not_exists: false };
    }
    try {
      await rest.post(Routes.channelMessages(channelId), { body });
    } catch (err) {
      throw toDeliveryError(err, channelId);
    }
    onPartSent(index);
  }
  return parts.length;
}

/** Discord's flag of a voice message. */
export const IS_VOICE_MESSAGE = 1 << 13;

/**
 * Posts a spoken reply as a Discord voice message: no content, one OGG/Opus file, flags
 * IS_VOICE_MESSAGE, its attachment carrying `duration_secs` and the base64 `waveform`.
 */
export async function deliverVoice(
  rest: REST,
  message: OutboundMessage,
  audio: { bytes: Buffer; durationSeconds: number; waveform: string | undefined },
): Promise<void> {
  const channelId = targetChannelId(message);
  const body: Record<string, unknown> = {
    flags: IS_VOICE_MESSAGE,
    nonce: nonceFor(message.id, 0),
    enforce_nonce: true,
    attachments: [
      {
        id: 0,
        filename: 'voice-message.ogg',
        duration_secs: Math.round(audio.durationSeconds * 100) / 100,
        // A flat line when the message carried none (Discord requires the field).
        waveform: audio.waveform ?? Buffer.alloc(256, 64).toString('base64'),
      },
    ],
    ...(message.replyTo
      ? { message_reference: { message_id: message.replyTo, fail_if_not_exists: false } }
      : {}),
  };
  try {
    await rest.post(Routes.channelMessages(channelId), {
      body,
      files: [{ name: 'voice-message.ogg', data: audio.bytes, contentType: 'audio/ogg' }],
    });
  } catch (err) {
    throw toDeliveryError(err, channelId);
  }
}

/** A ≤25-character nonce derived from the message id and part index. */
export function nonceFor(messageId: string, index: number): string {
  return createHash('sha256').update(`${messageId}:${index}`).digest('base64url').slice(0, 25);
}

/**
 * Classifies a discord.js REST failure. A RateLimitError (thrown only by a REST
 * built with `rejectOnRateLimit`; by default REST waits 429s out itself) is
 * DELIVERY_TRANSIENT carrying its wait as `retryAfterMs`.
 */
export function toDeliveryError(err: unknown, channelId: string): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof RateLimitError) {
    const retryAfterMs = Math.max(0, err.retryAfter > 0 ? err.retryAfter : err.timeToReset);
    return new AppError(
      'DELIVERY_TRANSIENT',
      `discord rate-limited channel ${channelId} (retry in ${retryAfterMs} ms, route ${err.route})`,
      { cause: err, transient: true, retryAfterMs },
    );
  }
  if (err instanceof DiscordAPIError) {
    const code = typeof err.code === 'number' ? err.code : Number(err.code);
    const permanent =
      PERMANENT_CODES.has(code) || (err.status >= 400 && err.status < 500 && err.status !== 429);
    return new AppError(
      permanent ? 'DELIVERY_PERMANENT' : 'DELIVERY_TRANSIENT',
      `discord refused the message for channel ${channelId}: ${err.message} (code ${code}, HTTP ${err.status})`,
      { cause: err, transient: !permanent },
    );
  }
  if (err instanceof HTTPError) {
    const permanent = err.status >= 400 && err.status < 500 && err.status !== 429;
    return new AppError(
      permanent ? 'DELIVERY_PERMANENT' : 'DELIVERY_TRANSIENT',
      `discord answered HTTP ${err.status} for channel ${channelId}`,
      { cause: err, transient: !permanent },
    );
  }
  return new AppError(
    'DELIVERY_TRANSIENT',
    `discord send failed for channel ${channelId}: ${describeError(err)}`,
    {
      cause: err,
      transient: true,
    },
  );
}
