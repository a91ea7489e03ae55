/**
 * Clean-up that always finishes: every step of a `close()`/`stop()` runs even
 * when an earlier one throws, and the failure is reported after the rest ran.
 * With `once`, a second `close()` gets the first call's promise (BullMQ's habit).
 */
import { AppError, describeError } from '../errors/index.js';

/** One clean-up step; may be sync or async. */
export type CleanupStep = () => unknown;

/**
 * Runs `steps` in order, each awaited, none skipped because another threw.
 * Resolves when all succeeded; otherwise rejects with the one failure, or an
 * AppError INTERNAL naming each when several failed (the errors in its `cause`).
 *
 * @example await runAll([() => this.poller.stop(), () => this.typing.stopAll()]);
 */
export async function runAll(steps: readonly CleanupStep[]): Promise<void> {
  const failures: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) {
    throw new AppError(
      'INTERNAL',
      `${failures.length} clean-up steps failed: ${failures.map(describeError).join('; ')}`,
      { cause: new AggregateError(failures) },
    );
  }
}

/**
 * Makes a `close()` idempotent: the first call starts `close`, every later
 * call returns the same promise.
 *
 * @example
 * readonly #close = once(() => runAll([...]));
 * close(): Promise<void> { return this.#close(); }
 */
export function once(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= close();
    return closing;
  };
}
