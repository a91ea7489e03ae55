/**
 * Attachments → Media: images and audio are downloaded (the shared size-capped
 * download) into data: URLs; other files are described by name, type and size.
 */

import type { Logger } from '../../log/index.js';
import type { Media } from '../../messages/messages.js';
import { remoteFileToMedia } from '../download.js';

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

function toMedia(attachment: AttachmentInfo, options: MediaOptions): Promise<Media> {
  return remoteFileToMedia(
    { name: attachment.name, mimeType: attachment.contentType, size: attachment.size, url: attachment.url },
    { ...options, label: 'discord attachment' },
  );
}
