/**
 * A GET that stays on the public internet (net-guard.ts): every hop's URL is
 * checked, the address connected to is the one the guarded DNS lookup
 * checked (a second DNS answer cannot swap it), redirects are followed by
 * hand (each target checked again), and the body is capped after
 * decompression. web_fetch reads pages with it; the API reads the images a
 * client names by URL.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { AppError } from '../errors/index.js';
import { assertFetchableUrl, guardedLookup, type NetPolicy, type Resolver } from './net-guard.js';
import { readCapped } from './read-capped.js';

/** One response: its status and headers, and the body up to the cap. */
export interface Fetched {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The body went past the cap; `body` holds its first part. */
  truncated: boolean;
}

/** Options of {@link guardedGetter}. */
export interface GuardedGetOptions {
  policy: NetPolicy;
  /** Body bytes read (after decompression); the rest is dropped. */
  maxBytes: number;
  /** @defaultValue 5 */
  maxRedirects?: number;
  /** Where host names are resolved (every answer is checked). @defaultValue `dns.lookup` */
  resolve?: Resolver | undefined;
  userAgent: string;
  /** @defaultValue HTML, text and JSON first */
  accept?: string;
}

/** What a guarded GET resolves to: the final URL (after redirects) and its response. */
export type GuardedGet = (start: URL, signal: AbortSignal) => Promise<{ url: URL; fetched: Fetched }>;

/**
 * Builds the GET. It rejects with AppError TOOL_FAILED (blocked target, too
 * many redirects) or fetch's own error (network, abort).
 *
 * @example
 * const get = guardedGetter({ policy: { allowPrivate: false, allowAddresses: [] }, maxBytes: 2 ** 21, userAgent: 'magpie' });
 * const { url, fetched } = await get(new URL('https://example.org'), AbortSignal.timeout(30_000));
 */
export function guardedGetter(options: GuardedGetOptions): GuardedGet {
  const lookup = guardedLookup(options.policy, options.resolve);
  const maxRedirects = options.maxRedirects ?? 5;
  const headers = {
    'user-agent': options.userAgent,
    accept: options.accept ?? 'text/html,application/xhtml+xml,text/plain,application/json;q=0.9,*/*;q=0.5',
    'accept-encoding': 'gzip, deflate, br',
  };
  return async (start, signal) => {
    let url = start;
    for (let hop = 0; ; hop++) {
      assertFetchableUrl(url, options.policy);
      const fetched = await getOnce(url, { lookup, headers, maxBytes: options.maxBytes, signal });
      const location = fetched.headers.location;
      if (fetched.status < 300 || fetched.status >= 400 || !location) return { url, fetched };
      if (hop >= maxRedirects)
        throw new AppError('TOOL_FAILED', `too many redirects (more than ${maxRedirects})`);
      url = new URL(location, url);
    }
  };
}

function decoded(res: IncomingMessage, zlib: typeof import('node:zlib')): Readable {
  switch (String(res.headers['content-encoding'] ?? '').toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return res.pipe(zlib.createGunzip());
    case 'deflate':
      return res.pipe(zlib.createInflate());
    case 'br':
      return res.pipe(zlib.createBrotliDecompress());
    default:
      return res;
  }
}

/**
 * One GET, body capped at `maxBytes`; rejects on network errors, a blocked target or abort.
 * node:http(s) and node:zlib are loaded at the first GET.
 */
async function getOnce(
  url: URL,
  o: {
    lookup: ReturnType<typeof guardedLookup>;
    headers: Record<string, string>;
    maxBytes: number;
    signal: AbortSignal;
  },
): Promise<Fetched> {
  const [{ request: send }, zlib] = await Promise.all([
    url.protocol === 'https:' ? import('node:https') : import('node:http'),
    import('node:zlib'),
  ]);
  return new Promise((resolve, reject) => {
    const req = send(url, { method: 'GET', signal: o.signal, lookup: o.lookup, headers: o.headers });
    req.once('error', reject);
    o.signal.addEventListener('abort', () => reject(o.signal.reason), { once: true });
    req.once('response', (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location) {
        res.resume();
        resolve({ status, headers: res.headers, body: Buffer.alloc(0), truncated: false });
        return;
      }
      res.once('error', reject);
      readCapped(decoded(res, zlib), o.maxBytes).then(({ bytes, over }) => {
        if (over) req.destroy();
        resolve({ status, headers: res.headers, body: bytes, truncated: over });
      }, reject);
    });
    req.end();
  });
}
