/** Parallel chats: 20 chats with a 1 s model are answered together, each chat's order kept. */
import { describe, expect, it } from 'vitest';
import { harnessPerTest, inbound, ScriptedAgent, waitFor } from './helpers.js';

describe('parallel chats', () => {
  const start = harnessPerTest();

  it('20 chats at once with a 1 s model: all answered well under 20 s, order kept per chat', async () => {
    const agent = new ScriptedAgent({ iterationMs: 1_000 });
    const harness = await start({ agent, concurrency: 16 });
    const started = Date.now();
    await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        await harness!.bus.publishInbound(inbound(`p${i}`, `p${i}-a`));
        await harness!.bus.publishInbound(inbound(`p${i}`, `p${i}-b`));
      }),
    );
    await waitFor(
      () =>
        new Set(harness!.channel.sent.map((m) => m.chatId)).size === 20 &&
        agent.turns.flatMap((t) => t.contents).length === 40,
      15_000,
      'all 20 chats answered',
    );
    const elapsed = Date.now() - started;
    expect(elapsed).toBeLessThan(6_000);
    expect(agent.maxConcurrent).toBeGreaterThan(1);
    expect(agent.maxConcurrentPerSession).toBe(1);
    for (let i = 0; i < 20; i++) {
      const seen = agent.turns.filter((t) => t.session === `test:p${i}`).flatMap((t) => t.contents);
      expect(seen).toEqual([`p${i}-a`, `p${i}-b`]);
    }
  });
});
