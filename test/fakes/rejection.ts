/** The error a promise rejects with, checked for its class, for tests that then assert its code or message. */
import { expect } from 'vitest';

/**
 * Awaits `promise` and returns what it rejected with; the test fails when it
 * resolves or rejects with something that is not a `type`.
 *
 * @example
 * const failure = (promise: Promise<unknown>) => rejectedWith(AppError, promise);
 * expect((await failure(provider.chat(request))).code).toBe('PROVIDER_AUTH');
 */
export async function rejectedWith<E extends Error>(
  type: abstract new (...args: never[]) => E,
  promise: Promise<unknown>,
): Promise<E> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(type);
  return err as E;
}
