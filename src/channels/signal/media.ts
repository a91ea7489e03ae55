/**
 * Signal attachments → Media. signal-cli downloads what it receives into its
 * data folder and reports each attachment's id; images (for vision models)
 * and audio (voice notes, transcribed like Telegram's) are read through the
 * JSON-RPC `getAttachment` (base64) when within MAGPIE_MAX_MEDIA_BYTES; other
 * files are described by name, type and size. A failure becomes a note the
 * model reads, never an exception.
 */
import { describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { Media } from '../../messages/messages.js';
import { tooLargeNote } from '../download.js';
import type { SignalAttachment } from './envelope.js';
import { targetOf } from './inbound.js';
import type { SignalRpc } from './rpc.js';

export interface MediaOptions {
  rpc: SignalRpc;
  /** Largest attachment read (MAGPIE_MAX_MEDIA_BYTES). */
  maxBytes: number;
  logger: Logger;
}

/** The attachments of a message in `chatId` from `senderId`, in order. */
export async function attachmentsToMedia(
  attachments: SignalAttachment[],
  where: { chatId: string; senderId: string },
  options: MediaOptions,
): Promise<Media[]> {
  const media: Media[] = [];
  for (const a of attachments) media.push(await toMedia(a, where, options));
  return media;
}

async function toMedia(
  attachment: SignalAttachment,
  where: { chatId: string; senderId: string },
  options: MediaOptions,
): Promise<Media> {
  const mimeType = (attachment.contentType ?? 'application/octet-stream').split(';')[0]!.trim().toLowerCase();
  const kind = mimeType.startsWith('image/') ? 'image' : mimeType.startsWith('audio/') ? 'audio' : 'file';
  const name = attachment.filename ?? (kind === 'audio' ? 'voice note' : 'attachment');
  const size = attachment.size ?? undefined;
  const described = { kind, mimeType, name, ...(size !== undefined ? { size } : {}) } as const;
  if (kind === 'file') {
    return { ...described, note: `file "${name}" (${mimeType}, ${size ?? '?'} bytes) was not opened` };
  }
  const what = `${kind} "${name}"`;
  if (size !== undefined && size > options.maxBytes)
    return { ...described, note: `${what} is ${tooLargeNote(size, options.maxBytes)}` };
  try {
    const target = targetOf(where.chatId);
    const from = 'groupId' in target ? target : { recipient: where.senderId };
    const result = await options.rpc.call<{ data?: unknown }>('getAttachment', {
      id: attachment.id,
      ...from,
    });
    if (typeof result?.data !== 'string') return { ...described, note: `${what} could not be read` };
    const bytes = Buffer.from(result.data, 'base64');
    if (bytes.length > options.maxBytes)
      return { ...described, note: `${what} is ${tooLargeNote(bytes.length, options.maxBytes)}` };
    return {
      ...described,
      size: bytes.length,
      dataUrl: `data:${mimeType};base64,${bytes.toString('base64')}`,
    };
  } catch (err) {
    options.logger.warn({ err: describeError(err), id: attachment.id }, 'signal attachment not read');
    return { ...described, note: `${what} could not be read (${describeError(err)})` };
  }
}
