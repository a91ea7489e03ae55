/**
 * The HTTP request of a search backend: one fetch with a time limit, and its
 * failures turned into AppErrors a model (and a person in `magpie doctor`)
 * can act on — a refused key names the variable to fix, 429 says to wait,
 * a slow service says how long was waited. Keys travel in headers only and
 * no message quotes a request header or a URL's credentials.
 */
import { AppError } from '../../errors/index.js';
import { decodeEntities } from '../entities.js';

export interface SearchRequest {
  /** Who answers, for messages ("Brave Search"). */
  label: string;
  url: URL;
  init: RequestInit;
  timeoutMs: number;
  signal: AbortSignal;
  /** What to fix on 401/403 (e.g. "check BRAVE_API_KEY"). */
  authFix: string;
  /** A special 403 meaning (SearXNG: the JSON format is off). */
  forbiddenFix?: string;
}

/** Sends the request and returns the parsed JSON body; throws an AppError phrased for the model. */
export async function requestJson(req: SearchRequest): Promise<unknown> {
  const timeout = AbortSignal.timeout(req.timeoutMs);
  const where = `${req.url.origin}${req.url.pathname}`;
  let res: Response;
  try {
    res = await fetch(req.url, { ...req.init, signal: AbortSignal.any([req.signal, timeout]) });
  } catch (err) {
    if (req.signal.aborted) throw new AppError('CANCELLED', 'search cancelled', { cause: err });
    if (timeout.aborted) {
      throw new AppError(
        'TIMEOUT',
        `${req.label} did not answer within ${req.timeoutMs / 1000} s; try again later`,
      );
    }
    const code = (err as { cause?: { code?: string } }).cause?.code;
    throw new AppError('TOOL_FAILED', `cannot reach ${req.label} at ${where}${code ? ` (${code})` : ''}`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw statusError(res, req);
  }
  try {
    return await res.json();
  } catch (err) {
    if (timeout.aborted) {
      throw new AppError(
        'TIMEOUT',
        `${req.label} did not finish its answer within ${req.timeoutMs / 1000} s`,
      );
    }
    throw new AppError('TOOL_FAILED', `${req.label} answered something that is not JSON`, { cause: err });
  }
}

function statusError(res: Response, req: SearchRequest): AppError {
  const status = res.status;
  if (status === 403 && req.forbiddenFix) {
    return new AppError('TOOL_FAILED', `${req.label} refused the request (HTTP 403): ${req.forbiddenFix}`);
  }
  if (status === 401 || status === 403) {
    return new AppError(
      'TOOL_FAILED',
      `${req.label} refused the credentials (HTTP ${status}): ${req.authFix}`,
    );
  }
  if (status === 429) {
    const after = Number(res.headers.get('retry-after'));
    const wait =
      Number.isFinite(after) && after > 0 ? `; try again in ${Math.ceil(after)} s` : '; try again later';
    return new AppError('TOOL_FAILED', `${req.label} rate limit reached (HTTP 429)${wait}`, {
      transient: true,
    });
  }
  if (status >= 500) {
    return new AppError('TOOL_FAILED', `${req.label} had a server error (HTTP ${status}); try again later`, {
      transient: true,
    });
  }
  return new AppError('TOOL_FAILED', `${req.label} answered HTTP ${status}`);
}

/** A snippet as plain text: tags (Brave marks matches with <strong>) dropped, entities decoded, blanks folded. */
export function plainSnippet(text: unknown): string {
  if (typeof text !== 'string') return '';
  return decodeEntities(text.replace(/<[^>]*>/g, ''))
    .replace(/\s+/g, ' ')
    .trim();
}

/** `root` joined with `path` (a root with its own path prefix keeps it). */
export function joinUrl(root: string, path: string): URL {
  const base = new URL(root);
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  return new URL(path.replace(/^\//, ''), base);
}
