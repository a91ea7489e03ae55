/**
 * The one size-capped download for attachments (Telegram and Discord media):
 * a GET with a time limit whose body is refused past `maxBytes` — at once when
 * the declared length is over, otherwise as soon as the bytes read pass it, so
 * a missing or wrong Content-Length cannot fill the memory.
 */
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
