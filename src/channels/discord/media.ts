/**
 * Attachments → Media: images and audio are downloaded (the shared size-capped
 * download) into data: URLs; other files are described by name, type and size.
 */

import { describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { Media } from '../../messages/messages.js';
import { downloadCapped, downloadFailureNote, tooLargeNote } from '../download.js';

/** What the adapter knows about one attachment before downloading it. */
export interface AttachmentInfo {
  name: string;
  /** MIME type reported by Discord; may be missing. */
  contentType: string | null | undefined;
  size: number;
  url: string;
}

export interface MediaOptions {
  /** Largest attachment downloaded (MAGPIE_MAX_MEDIA_BYTES). */
  maxBytes: number;
  logger: Logger;
  /** Per-download time limit. @defaultValue 30000 */
  timeoutMs?: number;
}

/** Turns attachments into Media entries, in order. A failed download becomes a note, never an exception. */
export async function attachmentsToMedia(
  attachments: AttachmentInfo[],
  options: MediaOptions,
): Promise<Media[]> {
  const media: Media[] = [];
  for (const attachment of attachments) media.push(await toMedia(attachment, options));
  return media;
}

async function toMedia(attachment: AttachmentInfo, options: MediaOptions): Promise<Media> {
  const mimeType = (attachment.contentType ?? 'application/octet-stream').split(';')[0]!.trim().toLowerCase();
  const kind = mimeType.startsWith('image/') ? 'image' : mimeType.startsWith('audio/') ? 'audio' : 'file';
  const described = { kind, mimeType, name: attachment.name, size: attachment.size } as const;
  if (kind === 'file')
    return {
      ...described,
      note: `file "${attachment.name}" (${mimeType}, ${attachment.size} bytes) was not opened`,
    };
  const what = `${kind} "${attachment.name}"`;
  if (attachment.size > options.maxBytes)
    return { ...described, note: `${what} is ${tooLargeNote(attachment.size, options.maxBytes)}` };
  try {
    const got = await downloadCapped(attachment.url, {
      maxBytes: options.maxBytes,
      timeoutMs: options.timeoutMs ?? 30_000,
    });
    if (!got.ok) return { ...described, note: `${what} ${downloadFailureNote(got, options.maxBytes)}` };
    return {
      ...described,
      size: got.bytes.length,
      dataUrl: `data:${mimeType};base64,${got.bytes.toString('base64')}`,
    };
  } catch (err) {
    options.logger.warn({ err, name: attachment.name }, 'discord attachment download failed');
    return { ...described, note: `${what} could not be downloaded (${describeError(err)})` };
  }
}
