/**
 * Files shared in Slack → Media: images and audio are downloaded with the bot
 * token (Slack's `url_private` needs it; the shared size-capped download) into
 * data: URLs; other files are described by name, type and size.
 */
import { describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { Media } from '../../messages/messages.js';
import { downloadCapped, downloadFailureNote, tooLargeNote } from '../download.js';

/** What the event says about one file before it is downloaded. */
export interface FileInfo {
  name: string;
  mimetype: string | undefined;
  size: number;
  url: string;
}

export interface MediaOptions {
  /** Largest file downloaded (MAGPIE_MAX_MEDIA_BYTES). */
  maxBytes: number;
  /** The bot token, sent as `Authorization: Bearer`. */
  token: string;
  logger: Logger;
  /** Per-download time limit. @defaultValue 30000 */
  timeoutMs?: number;
}

/** Turns files into Media entries, in order. A failed download becomes a note, never an exception. */
export async function filesToMedia(files: FileInfo[], options: MediaOptions): Promise<Media[]> {
  const media: Media[] = [];
  for (const file of files) media.push(await toMedia(file, options));
  return media;
}

async function toMedia(file: FileInfo, options: MediaOptions): Promise<Media> {
  const mimeType = (file.mimetype ?? 'application/octet-stream').split(';')[0]!.trim().toLowerCase();
  const kind = mimeType.startsWith('image/') ? 'image' : mimeType.startsWith('audio/') ? 'audio' : 'file';
  const described = { kind, mimeType, name: file.name, size: file.size } as const;
  if (kind === 'file')
    return { ...described, note: `file "${file.name}" (${mimeType}, ${file.size} bytes) was not opened` };
  const what = `${kind} "${file.name}"`;
  if (file.size > options.maxBytes)
    return { ...described, note: `${what} is ${tooLargeNote(file.size, options.maxBytes)}` };
  try {
    const got = await downloadCapped(file.url, {
      maxBytes: options.maxBytes,
      timeoutMs: options.timeoutMs ?? 30_000,
      headers: { authorization: `Bearer ${options.token}` },
    });
    if (!got.ok) return { ...described, note: `${what} ${downloadFailureNote(got, options.maxBytes)}` };
    return {
      ...described,
      size: got.bytes.length,
      dataUrl: `data:${mimeType};base64,${got.bytes.toString('base64')}`,
    };
  } catch (err) {
    options.logger.warn({ err, name: file.name }, 'slack file download failed');
    return { ...described, note: `${what} could not be downloaded (${describeError(err)})` };
  }
}
