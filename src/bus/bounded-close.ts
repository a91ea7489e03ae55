/**
 * Closing that cannot hang. BullMQ's `close()` ends a connection it owns with
 * QUIT, which waits in the offline queue while Redis is away (a dead master
 * whose Sentinels have not named a new one yet, or Sentinels that are gone):
 * a stop would wait forever. Each close here is given a time, after which the
 * connections are dropped instead.
 */

/** How long one queue's or worker's close may take once its jobs are done. */
export const CLOSE_TIMEOUT_MS = 5_000;

/**
 * Waits for `closing` at most `timeoutMs`; resolves true when it finished in time,
 * false when it did not (it is left running; its rejection is then ignored).
 *
 * @example if (!(await closedWithin(queue.close(), CLOSE_TIMEOUT_MS))) await queue.disconnect();
 */
export async function closedWithin(closing: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  // A close that fails after its time is up has nobody waiting for it.
  closing.catch(() => undefined);
  try {
    return await Promise.race([closing.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
