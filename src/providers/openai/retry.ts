/**
 * Retries transient provider failures with exponential backoff and jitter,
 * honouring a server's Retry-After within the cap. An abort during the wait
 * ends the loop with CancelledError.
 */
import { AppError, CancelledError, ProviderError } from '../../errors/index.js';

export interface RetryOptions {
  /** Retries after the first attempt. */
  maxRetries: number;
  /** Delay before the first retry; doubles each time. */
  baseMs: number;
  /** Upper bound of any one delay, Retry-After included. */
  maxMs: number;
  signal?: AbortSignal;
  /** Extra veto, e.g. "text was already streamed to the user", or "another model can answer instead". */
  canRetry?: (err: AppError) => boolean;
  /** Called before each wait. */
  onRetry?: (err: AppError, retry: number, delayMs: number) => void;
}

/** Runs `attempt` until it succeeds, fails permanently, or the retries run out. */
export async function withRetry<T>(attempt: (n: number) => Promise<T>, options: RetryOptions): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      const retryable =
        err instanceof AppError &&
        err.transient &&
        n < options.maxRetries &&
        !options.signal?.aborted &&
        (options.canRetry?.(err) ?? true);
      if (!retryable) throw err;
      const retryAfter = err instanceof ProviderError ? err.retryAfterMs : undefined;
      const delayMs = backoffDelay(n, options.baseMs, options.maxMs, retryAfter);
      options.onRetry?.(err, n + 1, delayMs);
      await sleep(delayMs, options.signal);
    }
  }
}

/** Delay before retry `n + 1`: `baseMs * 2^n` with ±20% jitter, or Retry-After, never above `maxMs`. */
export function backoffDelay(n: number, baseMs: number, maxMs: number, retryAfter?: number): number {
  if (retryAfter !== undefined) return Math.min(Math.max(retryAfter, 0), maxMs);
  const jitter = 0.8 + Math.random() * 0.4;
  return Math.min(Math.round(baseMs * 2 ** n * jitter), maxMs);
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new CancelledError());
    const onAbort = () => {
      clearTimeout(timer);
      reject(new CancelledError());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
