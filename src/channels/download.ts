/**
 * The one size-capped download for attachments (Telegram, Discord and Slack
 * media): a GET with a time limit whose body is refused past `maxBytes` — at
 * once when the declared length is over, otherwise as soon as the bytes read
 * pass it, so a missing or wrong Content-Length cannot fill the memory — and
 * `remoteFileToMedia`, a platform's file by URL as Media (Discord, Slack).
 */
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import type { Media } from '../messages/messages.js';
import { readCapped } from '../net/read-capped.js';

/** Options of {@link downloadCapped}. */
export interface CappedDownloadOptions {
  /** The most bytes accepted (MAGPIE_MAX_MEDIA_BYTES). */
  maxBytes: number;
  /** Time limit for the whole download. @defaultValue 60000 */
  timeoutMs?: number;
  /** Aborts the download (the channel stopping). */
  signal?: AbortSignal;
  /** Request headers (Slack's files need the bot token). fetch drops `authorization` on a redirect to another origin. */
  headers?: Record<string, string>;
}

/** The bytes, or why there are none. */
export type CappedDownload =
  | { ok: true; bytes: Buffer }
  /** `size`: the declared length, or the bytes read when the cap was passed (the file is at least that). */
  | { ok: false; reason: 'too-large'; size: number }
  | { ok: false; reason: 'http'; status: number };

/**
 * GETs `url` into memory, at most `maxBytes`. An HTTP error or an oversized
 * body is a result; a network failure, the time limit or `signal` rejects
 * (with fetch's own error).
 *
 * @example
 * const got = await downloadCapped(url, { maxBytes: 20_000_000 });
 * const note = got.ok ? undefined : downloadFailureNote(got, 20_000_000);
 */
export async function downloadCapped(
  url: string | URL,
  options: CappedDownloadOptions,
): Promise<CappedDownload> {
  const { maxBytes } = options;
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 60_000);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const res = await fetch(url, { signal, ...(options.headers ? { headers: options.headers } : {}) });
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    return { ok: false, reason: 'http', status: res.status };
  }
  const declared = Number(res.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body.cancel();
    return { ok: false, reason: 'too-large', size: declared };
  }
  const read = await readCapped(res.body, maxBytes);
  return read.over ? { ok: false, reason: 'too-large', size: read.seen } : { ok: true, bytes: read.bytes };
}

/** The note the model reads for an attachment over the limit. */
export function tooLargeNote(size: number, maxBytes: number): string {
  return `too large (${megabytes(size)}; the limit is ${megabytes(maxBytes)}), not downloaded`;
}

/** The note the model reads for a failed download. */
export function downloadFailureNote(
  failure: Exclude<CappedDownload, { ok: true }>,
  maxBytes: number,
): string {
  return failure.reason === 'too-large'
    ? tooLargeNote(failure.size, maxBytes)
    : `could not be downloaded (HTTP ${failure.status})`;
}

/** `1.5 MB`: sizes as notes write them. */
export function megabytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** A file a platform offers by URL: its name, reported MIME type and size. */
export interface RemoteFile {
  name: string;
  /** The MIME type the platform reports; may be missing (parameters after `;` are dropped). */
  mimeType: string | null | undefined;
  size: number;
  url: string;
}

/** How {@link remoteFileToMedia} downloads. */
export interface RemoteFileOptions {
  /** Largest file downloaded (MAGPIE_MAX_MEDIA_BYTES). */
  maxBytes: number;
  logger: Logger;
  /** Per-download time limit. @defaultValue 30000 */
  timeoutMs?: number;
  /** Request headers (a bot token). */
  headers?: Record<string, string>;
  /** Names the platform in the log line of a failed download, e.g. "discord attachment". */
  label: string;
}

/**
 * One platform file as Media: an image or audio clip downloaded (size-capped) into a data:
 * URL; any other file described by name, type and size. A failed download becomes a note,
 * never an exception.
 */
export async function remoteFileToMedia(file: RemoteFile, options: RemoteFileOptions): Promise<Media> {
  const mimeType = (file.mimeType ?? 'application/octet-stream').split(';')[0]!.trim().toLowerCase();
  const kind = mimeType.startsWith('image/') ? 'image' : mimeType.startsWith('audio/') ? 'audio' : 'file';
  const described = { kind, mimeType, name: file.name, size: file.size } as const;
  if (kind === 'file') {
    return { ...described, note: `file "${file.name}" (${mimeType}, ${file.size} bytes) was not opened` };
  }
  const what = `${kind} "${file.name}"`;
  if (file.size > options.maxBytes) {
    return { ...described, note: `${what} is ${tooLargeNote(file.size, options.maxBytes)}` };
  }
  try {
    const got = await downloadCapped(file.url, {
      maxBytes: options.maxBytes,
      timeoutMs: options.timeoutMs ?? 30_000,
      ...(options.headers ? { headers: options.headers } : {}),
    });
    if (!got.ok) return { ...described, note: `${what} ${downloadFailureNote(got, options.maxBytes)}` };
    return {
      ...described,
      size: got.bytes.length,
      dataUrl: `data:${mimeType};base64,${got.bytes.toString('base64')}`,
    };
  } catch (err) {
    options.logger.warn({ err, name: file.name }, `${options.label} download failed`);
    return { ...described, note: `${what} could not be downloaded (${describeError(err)})` };
  }
}
