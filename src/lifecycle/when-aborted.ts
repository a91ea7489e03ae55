/**
 * A promise for an AbortSignal: resolves when the signal aborts (at once when
 * it already has), never rejects, and lets the caller drop its listener when
 * it stops waiting — a turn's or a tool call's signal may outlive the wait.
 */

/** What {@link whenAborted} gives: the promise and the way to stop listening. */
export interface AbortWait {
  /** Resolves when the signal aborts. */
  aborted: Promise<void>;
  /** Removes the listener (the promise then never resolves unless it already has). Idempotent. */
  dispose: () => void;
}

/**
 * @example
 * const wait = whenAborted(signal);
 * try { await Promise.race([work, wait.aborted.then(() => CANCELLED)]); } finally { wait.dispose(); }
 */
export function whenAborted(signal: AbortSignal): AbortWait {
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    onAbort = () => resolve();
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return {
    aborted,
    dispose: () => {
      if (onAbort) signal.removeEventListener('abort', onAbort);
      onAbort = undefined;
    },
  };
}
