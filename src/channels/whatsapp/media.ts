/**
 * Received attachments → Media. An image, sticker or voice note is fetched
 * in two steps, both with the access token: the Graph media endpoint gives a
 * short-lived URL for the media id, then the shared size-capped download
 * (download.ts) takes the bytes into a data: URL — images reach vision
 * models, voice notes are transcribed by the worker when
 * MAGPIE_TRANSCRIBE_MODEL is set. Anything else is described by a note.
 * A failure becomes a note the model reads, never an exception.
 */
import type { Logger } from '../../log/index.js';
import type { Media } from '../../messages/messages.js';
import { remoteFileToMedia } from '../download.js';
import { type GraphClient, graphFailure } from './graph.js';
import type { MediaPlan } from './inbound.js';

export interface FetchMediaOptions {
  graph: GraphClient;
  /** Largest file downloaded (MAGPIE_MAX_MEDIA_BYTES). */
  maxBytes: number;
  logger: Logger;
  /** Per-download time limit. @defaultValue 30000 */
  timeoutMs?: number;
}

/** The plans as Media, in order. */
export async function fetchMedia(plans: MediaPlan[], options: FetchMediaOptions): Promise<Media[]> {
  const media: Media[] = [];
  for (const plan of plans) media.push(plan.kind === 'describe' ? plan.media : await fetchOne(plan, options));
  return media;
}

async function fetchOne(
  plan: Extract<MediaPlan, { kind: 'fetch' }>,
  options: FetchMediaOptions,
): Promise<Media> {
  const kind = plan.mimeType.startsWith('audio/') ? 'audio' : 'image';
  let info: Awaited<ReturnType<GraphClient['media']>>;
  try {
    info = await options.graph.media(plan.mediaId);
  } catch (err) {
    options.logger.warn({ err: graphFailure(err) }, 'whatsapp media lookup failed');
    return {
      kind,
      mimeType: plan.mimeType,
      name: plan.name,
      note: `${kind} "${plan.name}" could not be downloaded (${graphFailure(err)})`,
    };
  }
  return remoteFileToMedia(
    {
      name: plan.name,
      mimeType: info.mimeType ?? plan.mimeType,
      // Meta may leave the size out: the download is capped either way.
      size: info.size ?? 0,
      url: info.url,
    },
    {
      maxBytes: options.maxBytes,
      logger: options.logger,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      headers: { authorization: `Bearer ${options.graph.token}` },
      label: 'whatsapp media',
    },
  );
}
