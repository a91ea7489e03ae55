/**
 * The images of an API request as Media for vision models: a `data:` URL is
 * decoded and checked; an http(s) URL is fetched with the public-only GET
 * (net/guarded-get.ts: no private, loopback or metadata addresses, redirects
 * checked), so a caller cannot make the gateway read its own network
 * (unless MAGPIE_WEB_ALLOW_PRIVATE allows it, as for web_fetch). Both
 * are capped at MAGPIE_MAX_MEDIA_BYTES and must be images.
 */
import { describeError } from '../../errors/index.js';
import type { Media } from '../../messages/messages.js';
import { guardedGetter } from '../../net/guarded-get.js';

/** The most images one request may carry. */
export const MAX_IMAGES = 8;

const DATA_URL = /^data:(image\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/=\s]*)$/i;

/** Options of {@link readImages}. */
export interface ImageReadOptions {
  maxBytes: number;
  /** Time for all downloads together. @defaultValue 30000 */
  timeoutMs?: number;
  /** The request was abandoned. */
  signal?: AbortSignal;
  /** Private, loopback and link-local addresses too (never cloud metadata). @defaultValue false */
  allowPrivate?: boolean;
}

/** The images, or why the request is refused (one line for a 400). */
export async function readImages(
  urls: readonly string[],
  options: ImageReadOptions,
): Promise<{ media: Media[] } | { problem: string }> {
  if (urls.length > MAX_IMAGES) return { problem: `at most ${MAX_IMAGES} images per message` };
  const media: Media[] = [];
  const signal = AbortSignal.any([
    AbortSignal.timeout(options.timeoutMs ?? 30_000),
    ...(options.signal ? [options.signal] : []),
  ]);
  for (const [i, url] of urls.entries()) {
    const read = url.startsWith('data:')
      ? fromDataUrl(url, options.maxBytes)
      : await fromWeb(url, options, signal);
    if ('problem' in read) return { problem: `image ${i + 1}: ${read.problem}` };
    media.push(read.media);
  }
  return { media };
}

function sizeText(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function fromDataUrl(url: string, maxBytes: number): { media: Media } | { problem: string } {
  // Checked before the pattern runs: a huge string is refused by its length alone.
  if (url.length > Math.ceil((maxBytes * 4) / 3) + 200)
    return { problem: `larger than ${sizeText(maxBytes)}` };
  const match = DATA_URL.exec(url);
  if (!match) return { problem: 'not a base64 data: URL of an image (data:image/png;base64,…)' };
  const mimeType = (match[1] ?? '').toLowerCase();
  const bytes = Buffer.from(match[2] ?? '', 'base64');
  if (bytes.length === 0) return { problem: 'empty' };
  if (bytes.length > maxBytes) return { problem: `larger than ${sizeText(maxBytes)}` };
  return {
    media: {
      kind: 'image',
      mimeType,
      size: bytes.length,
      dataUrl: `data:${mimeType};base64,${bytes.toString('base64')}`,
    },
  };
}

async function fromWeb(
  raw: string,
  options: ImageReadOptions,
  signal: AbortSignal,
): Promise<{ media: Media } | { problem: string }> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { problem: 'not a URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return { problem: 'only data:, http: and https: URLs are read' };
  const get = guardedGetter({
    policy: { allowPrivate: options.allowPrivate ?? false, allowAddresses: [] },
    maxBytes: options.maxBytes,
    userAgent: 'magpie/0.1 (+api image)',
    accept: 'image/*',
  });
  try {
    const { fetched } = await get(url, signal);
    if (fetched.status !== 200) return { problem: `${url.host} answered ${fetched.status}` };
    if (fetched.truncated) return { problem: `larger than ${sizeText(options.maxBytes)}` };
    const mimeType =
      String(fetched.headers['content-type'] ?? '')
        .split(';')[0]
        ?.trim()
        .toLowerCase() ?? '';
    if (!mimeType.startsWith('image/'))
      return { problem: `${url.host} sent ${mimeType || 'no type'}, not an image` };
    const { body } = fetched;
    return {
      media: {
        kind: 'image',
        mimeType,
        size: body.length,
        dataUrl: `data:${mimeType};base64,${body.toString('base64')}`,
      },
    };
  } catch (err) {
    return { problem: `not read: ${describeError(err)}` };
  }
}
