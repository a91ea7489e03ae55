/** TypingLoop (Telegram and Discord): at once, every interval, stop, the safety cap, failures swallowed. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TypingLoop } from '../../../src/channels/typing.js';
import { silentLogger } from '../../../src/log/index.js';

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

function counter(fail = false) {
  const calls: string[] = [];
  const send = (key: string) => async () => {
    calls.push(key);
    if (fail) throw new Error('HTTP 500');
  };
  return { calls, send };
}

describe('TypingLoop', () => {
  it('types at once, repeats every interval and sends nothing after stop()', async () => {
    const typing = new TypingLoop({ logger: silentLogger(), intervalMs: 1000 });
    const { calls, send } = counter();
    typing.start('c1', send('c1'));
    expect(calls).toEqual(['c1']);
    typing.start('c1', send('c1')); // already typing: no extra indicator
    expect(calls).toEqual(['c1']);
    await vi.advanceTimersByTimeAsync(2500);
    expect(calls).toEqual(['c1', 'c1', 'c1']);
    typing.stop('c1');
    expect(typing.isActive('c1')).toBe(false);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls).toHaveLength(3);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps chats apart: stopping one leaves the other typing', async () => {
    const typing = new TypingLoop({ logger: silentLogger(), intervalMs: 1000 });
    const { calls, send } = counter();
    typing.start('a', send('a'));
    typing.start('b', send('b'));
    typing.stop('a');
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toEqual(['a', 'b', 'b']);
    expect(typing.isActive('b')).toBe(true);
    typing.stopAll();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stops by itself after the safety cap, counted from the latest start', async () => {
    const typing = new TypingLoop({ logger: silentLogger(), intervalMs: 1000, maxDurationMs: 5000 });
    const { calls, send } = counter();
    typing.start('c', send('c'));
    await vi.advanceTimersByTimeAsync(3000);
    typing.start('c', send('c')); // a second turn in the same chat: the cap starts again
    await vi.advanceTimersByTimeAsync(4000);
    expect(typing.isActive('c')).toBe(true);
    await vi.advanceTimersByTimeAsync(1000);
    expect(typing.isActive('c')).toBe(false);
    const count = calls.length;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls).toHaveLength(count);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('never throws when the indicator fails, and keeps trying', async () => {
    const typing = new TypingLoop({ logger: silentLogger(), intervalMs: 1000 });
    const { calls, send } = counter(true);
    typing.start('c', send('c'));
    await vi.advanceTimersByTimeAsync(2000);
    expect(calls).toHaveLength(3);
    expect(typing.isActive('c')).toBe(true);
    typing.stopAll();
    expect(typing.isActive('c')).toBe(false);
  });

  it('refuses intervals that are not positive', () => {
    expect(() => new TypingLoop({ logger: silentLogger(), intervalMs: 0 })).toThrow(RangeError);
    expect(() => new TypingLoop({ logger: silentLogger(), maxDurationMs: Number.NaN })).toThrow(RangeError);
  });
});
