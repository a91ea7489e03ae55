/**
 * The channels' side of a spoken reply: the audio an outbound message
 * carries, decoded from its data: URL and checked (OGG/Opus, at most
 * MAX_SPOKEN_BYTES). Senders that play audio call {@link spokenAudio}; the
 * others never receive such a message (their descriptors lack `playsAudio`).
 */
import { AppError } from '../errors/index.js';
import type { OutboundMessage } from '../messages/messages.js';
import { readOggOpus } from './ogg.js';

/** The largest spoken reply a channel sends (Telegram's bot upload limit is far above). */
export const MAX_SPOKEN_BYTES = 16 * 1024 * 1024;

/** A spoken reply ready to upload. */
export interface SpokenAudio {
  bytes: Buffer;
  mimeType: 'audio/ogg';
  /** From the stream itself (granule position / 48000), not the message's claim. */
  durationSeconds: number;
  /** Base64 of 256 loudness bytes, when the message carried one. */
  waveform: string | undefined;
}

const DATA_URL = /^data:audio\/ogg(?:;[a-z]+=[\w-]+)*;base64,([A-Za-z0-9+/]*={0,2})$/;

/**
 * The message's audio, or undefined when it carries none.
 * @throws AppError INVALID_MESSAGE (not retried) for audio that is not a base64 OGG/Opus data: URL or is too large.
 */
export function spokenAudio(message: Pick<OutboundMessage, 'id' | 'media'>): SpokenAudio | undefined {
  const media = message.media?.find((m) => m.kind === 'audio');
  if (!media) return undefined;
  const match = DATA_URL.exec(media.dataUrl ?? '');
  if (!match?.[1]) throw invalid(message.id, 'its audio is not a base64 audio/ogg data: URL');
  if ((match[1].length * 3) / 4 > MAX_SPOKEN_BYTES) throw invalid(message.id, 'its audio is too large');
  const bytes = Buffer.from(match[1], 'base64');
  const info = readOggOpus(bytes);
  if (!info) throw invalid(message.id, 'its audio is not an OGG/Opus stream');
  return { bytes, mimeType: 'audio/ogg', durationSeconds: info.durationSeconds, waveform: media.waveform };
}

function invalid(id: string, why: string): AppError {
  return new AppError('INVALID_MESSAGE', `outbound message ${id}: ${why}`);
}
