/**
 * Turns inbound messages (text plus media) into user ChatMessages: images
 * become image parts, voice becomes a transcript (or a marked placeholder),
 * other files a one-line description; group messages carry the sender's name.
 */

import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import type { InboundMessage, Media } from '../messages/messages.js';
import type { ChatMessage, ContentPart, LLMProvider } from '../providers/types.js';

/** What a voice note becomes when nothing transcribed it. */
export const VOICE_NOT_TRANSCRIBED = '[voice message: not transcribed]';

export interface UserContentOptions {
  /** Used for `transcribe` when `transcribe` is true. */
  provider: Pick<LLMProvider, 'transcribe'>;
  /** Transcribe audio through the provider (MAGPIE_TRANSCRIBE_MODEL set). @defaultValue false */
  transcribe?: boolean;
  signal?: AbortSignal;
  logger: Logger;
}

/** One user message for the request and its lighter twin for the session log (no image bytes). */
export interface UserTurnMessage {
  forModel: ChatMessage;
  forLog: ChatMessage;
}

/**
 * Converts one inbound message into a user message.
 *
 * @example
 * const { forModel, forLog } = await toUserMessage(msg, { provider, logger });
 */
export async function toUserMessage(
  msg: InboundMessage,
  options: UserContentOptions,
): Promise<UserTurnMessage> {
  const lines: string[] = [];
  const images: ContentPart[] = [];
  const imageNotes: string[] = [];
  for (const media of msg.media) {
    if (media.kind === 'image' && media.dataUrl) {
      images.push({ type: 'image', url: media.dataUrl, mimeType: media.mimeType });
      imageNotes.push(`[image: ${describeMedia(media)}]`);
    } else if (media.kind === 'audio') {
      lines.push(await voiceText(media, options));
    } else {
      lines.push(`[${media.kind}: ${describeMedia(media)}]`);
    }
    if (media.note) lines.push(`[note: ${media.note}]`);
  }
  const prefix = msg.isGroup && msg.senderName ? `${msg.senderName}: ` : '';
  const text = [prefix + msg.content, ...lines].filter((t) => t.trim() !== '').join('\n');
  if (images.length === 0) {
    const message: ChatMessage = { role: 'user', content: text };
    return { forModel: message, forLog: message };
  }
  return {
    forModel: { role: 'user', content: [{ type: 'text', text: text || '(image)' }, ...images] },
    forLog: { role: 'user', content: [text, ...imageNotes].filter((t) => t !== '').join('\n') },
  };
}

/** Converts a batch, in order. */
export async function toUserMessages(
  messages: InboundMessage[],
  options: UserContentOptions,
): Promise<UserTurnMessage[]> {
  const out: UserTurnMessage[] = [];
  for (const msg of messages) out.push(await toUserMessage(msg, options));
  return out;
}

function describeMedia(media: Media): string {
  const parts = [media.name ?? 'unnamed', media.mimeType];
  if (media.size !== undefined) parts.push(formatBytes(media.size));
  return parts.join(', ');
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

async function voiceText(media: Media, options: UserContentOptions): Promise<string> {
  if (media.transcript) return `[voice message] ${media.transcript}`;
  const { provider, transcribe, logger, signal } = options;
  if (!transcribe || !provider.transcribe || !media.dataUrl) return VOICE_NOT_TRANSCRIBED;
  const bytes = decodeDataUrl(media.dataUrl);
  if (!bytes) return VOICE_NOT_TRANSCRIBED;
  try {
    const audio = { bytes, fileName: media.name ?? 'voice.ogg', mimeType: media.mimeType };
    const text = await provider.transcribe(audio, signal);
    return `[voice message] ${text}`;
  } catch (err) {
    logger.warn({ err: describeError(err) }, 'voice transcription failed');
    return '[voice message: transcription failed]';
  }
}

function decodeDataUrl(url: string): Uint8Array | undefined {
  const match = /^data:[^;,]*(;base64)?,(.*)$/s.exec(url);
  if (!match) return undefined;
  const payload = match[2] ?? '';
  return match[1] ? Buffer.from(payload, 'base64') : Buffer.from(decodeURIComponent(payload), 'utf8');
}
