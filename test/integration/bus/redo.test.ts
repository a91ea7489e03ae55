/** Redone turns and long turns: reply ids are stable, and a live turn keeps its lock. */
import { describe, expect, it } from 'vitest';
import { replyId, turnId } from '../../../src/messages/outbound-ids.js';
import { harnessPerTest, inbound, ScriptedAgent, waitFor } from './helpers.js';

describe('redone and long turns', () => {
  const start = harnessPerTest();

  it('a turn redone after its reply was already queued does not post a second reply', async () => {
    const agent = new ScriptedAgent();
    const harness = await start({ agent });
    const message = inbound('d1', 'hello');
    // As if an earlier attempt had queued its reply and died before trimming the mailbox.
    await harness.bus.publishOutbound({
      id: replyId(turnId('test:d1', message.id)),
      channel: 'test',
      chatId: 'd1',
      content: 'first attempt',
    });
    await waitFor(() => harness!.channel.sent.length === 1, 5_000, 'earlier reply delivered');
    await harness.bus.publishInbound(message);
    await waitFor(() => agent.turns.length === 1, 5_000, 'turn redone');
    await waitFor(
      async () => (await harness!.bus.mailbox('test:d1').length()) === 0,
      5_000,
      'mailbox trimmed',
    );
    await waitFor(
      async () => (await harness!.bus.pendingJobs('outbound-test')) === 0,
      5_000,
      'outbound idle',
    );
    expect(harness.channel.sent.map((m) => m.content)).toEqual(['first attempt']);
  });

  it('a turn longer than the lock keeps its lock (renewed) and runs once', async () => {
    const agent = new ScriptedAgent({ iterationMs: 3_000 });
    const harness = await start({ agent, tuning: { lockDurationMs: 1_000, stalledIntervalMs: 500 } });
    await harness.bus.publishInbound(inbound('d2', 'long'));
    await waitFor(() => harness!.channel.sent.length === 1, 10_000, 'reply');
    expect(agent.turns).toHaveLength(1);
    expect(agent.maxConcurrentPerSession).toBe(1);
    expect(harness.channel.sent[0]!.content).toBe('long');
  });

  it('a message delivered again after it was answered is taken once, and the next message is answered', async () => {
    const agent = new ScriptedAgent();
    const harness = await start({ agent });
    const first = inbound('d3', 'first');
    await harness.bus.publishInbound(first);
    await waitFor(() => harness!.channel.sent.length === 1, 5_000, 'first answer');
    // The platform delivers the first message again (a restart before it was confirmed), then the user writes on.
    await harness.bus.publishInbound(first);
    await harness.bus.publishInbound(inbound('d3', 'second'));
    await waitFor(() => harness!.channel.sent.length === 2, 5_000, 'second answer');
    expect(harness.channel.sent.map((m) => m.content)).toEqual(['first', 'second']);
    expect(agent.turns.map((t) => t.contents)).toEqual([['first'], ['second']]);
  });
});
