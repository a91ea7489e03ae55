/**
 * Files shared in Slack → Media: images and audio are downloaded with the bot
 * token (Slack's `url_private` needs it; the shared size-capped download) into
 * data: URLs; other files are described by name, type and size.
 */
import type { Logger } from '../../log/index.js';
import type { Media } from '../../messages/messages.js';
import { remoteFileToMedia } from '../download.js';

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

function toMedia(file: FileInfo, options: MediaOptions): Promise<Media> {
  return remoteFileToMedia(
    { name: file.name, mimeType: file.mimetype, size: file.size, url: file.url },
    {
      maxBytes: options.maxBytes,
      logger: options.logger,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      // Slack's file URLs need the bot token.
      headers: { authorization: `Bearer ${options.token}` },
      label: 'slack file',
    },
  );
}
