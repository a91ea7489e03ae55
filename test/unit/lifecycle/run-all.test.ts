/** runAll and once: every clean-up step runs whatever throws, and a second close gets the first promise. */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/index.js';
import { once, runAll } from '../../../src/lifecycle/run-all.js';

describe('runAll', () => {
  it('runs every step in order, awaiting each', async () => {
    const seen: string[] = [];
    await runAll([
      async () => {
        await new Promise((resolve) => setImmediate(resolve));
        seen.push('a');
      },
      () => seen.push('b'),
      () => undefined,
    ]);
    expect(seen).toEqual(['a', 'b']);
  });

  it('runs the steps after one that throws (sync or async) and rejects with that error', async () => {
    const seen: string[] = [];
    const boom = new AppError('INTERNAL', 'poller broke');
    const result = runAll([
      () => seen.push('downloads'),
      async () => {
        throw boom;
      },
      () => seen.push('typing'),
    ]);
    await expect(result).rejects.toBe(boom);
    expect(seen).toEqual(['downloads', 'typing']);
  });

  it('names every failure when several steps fail, keeping them in the cause', async () => {
    const seen: string[] = [];
    const err = await runAll([
      () => {
        throw new AppError('INTERNAL', 'first');
      },
      () => seen.push('middle'),
      () => Promise.reject(new AppError('INTERNAL', 'second')),
    ]).catch((e: unknown) => e);
    expect(seen).toEqual(['middle']);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('INTERNAL');
    expect((err as AppError).message).toBe('2 clean-up steps failed: first; second');
    expect(((err as AppError).cause as AggregateError).errors).toHaveLength(2);
  });
});

describe('once', () => {
  it('starts the close once and hands every caller the same promise, failed or not', async () => {
    let calls = 0;
    const close = once(async () => {
      calls++;
      throw new AppError('INTERNAL', 'broke');
    });
    const first = close();
    const second = close();
    expect(second).toBe(first);
    await expect(first).rejects.toThrow('broke');
    expect(close()).toBe(first);
    expect(calls).toBe(1);
  });
});
