/** Per-chat order: quick messages to one chat never run as two turns at once and all reach the agent in order. */
import { describe, expect, it } from 'vitest';
import { harnessPerTest, inbound, ScriptedAgent, waitFor } from './helpers.js';

describe('per-chat order', () => {
  const start = harnessPerTest();

  it('three quick messages to one chat: one turn at a time, all in order, mailbox empty', async () => {
    const agent = new ScriptedAgent({ iterationMs: 150, iterations: 2 });
    const harness = await start({ agent });
    for (const text of ['one', 'two', 'three']) await harness.bus.publishInbound(inbound('c1', text));
    await waitFor(
      () => agent.turns.flatMap((t) => t.contents).length >= 3,
      10_000,
      'all three messages seen',
    );
    await waitFor(() => harness!.channel.sent.length >= agent.turns.length, 10_000, 'replies delivered');

    expect(agent.maxConcurrentPerSession).toBe(1);
    expect(agent.turns.flatMap((t) => t.contents)).toEqual(['one', 'two', 'three']);
    expect(harness.channel.sent.length).toBeGreaterThanOrEqual(1);
    expect(harness.channel.sent.map((m) => m.content).join('+')).toBe('one+two+three');
    for (let i = 1; i < agent.turns.length; i++)
      expect(agent.turns[i]!.start).toBeGreaterThanOrEqual(agent.turns[i - 1]!.end);
    expect(await harness.bus.mailbox('test:c1').length()).toBe(0);
  });

  it('messages arriving during a turn are drained into it between iterations', async () => {
    const agent = new ScriptedAgent({ iterationMs: 300, iterations: 2 });
    const harness = await start({ agent });
    await harness.bus.publishInbound(inbound('c2', 'first'));
    await waitFor(() => harness!.worker.activeTurns === 1, 5_000, 'turn started');
    await harness.bus.publishInbound(inbound('c2', 'second'));
    await waitFor(() => harness!.channel.sent.length >= 1, 5_000, 'reply');
    expect(harness.channel.sent[0]!.content).toBe('first+second');
    expect(harness.channel.sent[0]!.kind).toBe('reply');
    // The deduplicated follow-up job finds an empty mailbox: no second turn.
    await waitFor(async () => (await harness!.bus.pendingJobs('inbound')) === 0, 5_000, 'inbound queue idle');
    expect(agent.turns).toHaveLength(1);
  });

  it('shows activity in the chat while the turn runs', async () => {
    const agent = new ScriptedAgent({ iterationMs: 50 });
    const harness = await start({ agent });
    await harness.bus.publishInbound(inbound('c3', 'hi'));
    await waitFor(() => harness!.channel.activity.length >= 2, 5_000, 'activity start and stop');
    expect(harness.channel.activity).toEqual([
      { chatId: 'c3', active: true },
      { chatId: 'c3', active: false },
    ]);
  });
});
