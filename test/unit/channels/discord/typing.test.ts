/** TypingIndicators: immediate first call, repeats, stop, safety cap, failures swallowed. */
import { describe, expect, it } from 'vitest';
import { TypingIndicators } from '../../../../src/channels/discord/typing.js';
import { silentLogger } from '../../../../src/log/index.js';

async function until(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('TypingIndicators', () => {
  it('types at once, repeats every interval and stops on stop()', async () => {
    const calls: string[] = [];
    const typing = new TypingIndicators({
      logger: silentLogger(),
      intervalMs: 20,
      sendTyping: async (id) => {
        calls.push(id);
      },
    });
    typing.start('c1');
    expect(calls).toEqual(['c1']);
    typing.start('c1'); // already typing: no extra call
    expect(calls).toEqual(['c1']);
    await until(() => calls.length >= 3);
    typing.stop('c1');
    expect(typing.isActive('c1')).toBe(false);
    const count = calls.length;
    await new Promise((r) => setTimeout(r, 60));
    expect(calls.length).toBe(count);
  });

  it('stops by itself after the safety cap', async () => {
    let calls = 0;
    const typing = new TypingIndicators({
      logger: silentLogger(),
      intervalMs: 10,
      maxDurationMs: 40,
      sendTyping: async () => {
        calls++;
      },
    });
    typing.start('c');
    await until(() => !typing.isActive('c'));
    const count = calls;
    expect(count).toBeGreaterThanOrEqual(1);
    await new Promise((r) => setTimeout(r, 50));
    expect(calls).toBe(count);
  });

  it('never throws when the typing call fails', async () => {
    let calls = 0;
    const typing = new TypingIndicators({
      logger: silentLogger(),
      intervalMs: 10,
      sendTyping: async () => {
        calls++;
        throw new Error('HTTP 500');
      },
    });
    typing.start('c');
    await until(() => calls >= 2);
    expect(typing.isActive('c')).toBe(true);
    typing.stopAll();
    expect(typing.isActive('c')).toBe(false);
  });
});
