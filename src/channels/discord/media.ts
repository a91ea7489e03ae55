/**
 * Attachments → Media: images and audio are downloaded (size-checked before and
 * while reading) into data: URLs; other files are described by name, type and size.
 */
import type { Media } from '../../bus/messages.js';
import { describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';

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
  if (attachment.size > options.maxBytes) {
    return {
      ...described,
      note: `${kind} "${attachment.name}" is too large (${attachment.size} bytes; the limit is ${options.maxBytes})`,
    };
  }
  try {
    const bytes = await download(attachment.url, options.maxBytes, options.timeoutMs ?? 30_000);
    return {
      ...described,
      size: bytes.length,
      dataUrl: `data:${mimeType};base64,${bytes.toString('base64')}`,
    };
  } catch (err) {
    options.logger.warn({ err, name: attachment.name }, 'discord attachment download failed');
    return {
      ...described,
      note: `${kind} "${attachment.name}" could not be downloaded (${describeError(err)})`,
    };
  }
}

/** GETs `url` into memory, refusing more than `maxBytes`. */
async function download(url: string, maxBytes: number, timeoutMs: number): Promise<Buffer> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of res.body) {
    total += chunk.length;
    if (total > maxBytes) throw new Error(`larger than ${maxBytes} bytes`);
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}
