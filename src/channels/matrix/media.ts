/**
 * Files shared in Matrix → Media: images and audio (voice messages are
 * `m.audio`, transcribed downstream when MAGPIE_TRANSCRIBE_MODEL is set) are
 * downloaded through the authenticated media API
 * (`/_matrix/client/v1/media/download/<server>/<id>`, with the access token;
 * the shared size-capped download) into data: URLs; other files are described.
 */
import type { Logger } from '../../log/index.js';
import type { Media } from '../../messages/messages.js';
import { remoteFileToMedia } from '../download.js';

/** A file a message points at, before it is downloaded. */
export interface MediaRef {
  name: string;
  mimetype: string | undefined;
  size: number;
  /** Its mxc:// URI (checked well formed by inbound.ts). */
  mxc: string;
}

export interface MediaOptions {
  /** The mxc URI → the authenticated download URL on the homeserver. */
  downloadUrl(mxc: string): string | null;
  accessToken: string;
  /** Largest file downloaded (MAGPIE_MAX_MEDIA_BYTES). */
  maxBytes: number;
  logger: Logger;
}

/** Turns files into Media entries, in order. A failed download becomes a note, never an exception. */
export async function refsToMedia(refs: MediaRef[], options: MediaOptions): Promise<Media[]> {
  const media: Media[] = [];
  for (const ref of refs) {
    const url = options.downloadUrl(ref.mxc);
    if (!url) {
      media.push({
        kind: 'file',
        mimeType: 'application/octet-stream',
        name: ref.name,
        note: 'the file has no address',
      });
      continue;
    }
    media.push(
      await remoteFileToMedia(
        { name: ref.name, mimeType: ref.mimetype, size: ref.size, url },
        {
          maxBytes: options.maxBytes,
          logger: options.logger,
          headers: { authorization: `Bearer ${options.accessToken}` },
          label: 'matrix media',
        },
      ),
    );
  }
  return media;
}
