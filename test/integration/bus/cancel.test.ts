/** /stop reaches the worker running the session's turn; queued messages stay queued. */
import { describe, expect, it } from 'vitest';
import { sendAndWait } from '../../../src/channels/cli/client.js';
import { harnessPerTest, inbound, ScriptedAgent, waitFor } from './helpers.js';

describe('cancellation', () => {
  const start = harnessPerTest();

  it('/stop aborts the running turn; a message queued behind it still gets its turn', async () => {
    const agent = new ScriptedAgent({
      iterationMs: (contents) => (contents.includes('long task') ? 10_000 : 10),
    });
    const harness = await start({ agent });
    await harness.bus.publishInbound(inbound('s1', 'long task'));
    await waitFor(() => harness!.worker.activeTurns === 1, 5_000, 'turn running');
    await harness.bus.publishInbound(inbound('s1', 'queued'));
    const started = Date.now();
    await harness.bus.publishInbound(inbound('s1', '/stop'));
    await waitFor(() => harness!.channel.sent.length >= 2, 5_000, 'stopped reply, then the queued turn');
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(harness.channel.sent.map((m) => m.content)).toEqual(['Stopped.', 'queued']);
    expect(agent.turns.flatMap((t) => t.contents)).toEqual(['long task', 'queued']);
    expect(await harness.bus.mailbox('test:s1').length()).toBe(0);
  });

  it('/stop with nothing running answers "Nothing to stop." and queues no turn', async () => {
    const agent = new ScriptedAgent();
    const harness = await start({ agent });
    expect(await harness.bus.cancel('test:s2')).toBe(false);
    await harness.bus.publishInbound(inbound('s2', ' /stop '));
    await waitFor(() => harness!.channel.sent.length === 1, 5_000, 'answer');
    expect(harness.channel.sent[0]!.content).toBe('Nothing to stop.');
    expect(agent.turns).toHaveLength(0);
    expect(await harness.bus.mailbox('test:s2').length()).toBe(0);
  });

  it('cancel() returns true while a turn of that session runs', async () => {
    const agent = new ScriptedAgent({ iterationMs: 10_000 });
    const harness = await start({ agent });
    await harness.bus.publishInbound(inbound('s3', 'first'));
    await waitFor(() => harness!.worker.activeTurns === 1, 5_000, 'turn running');
    expect(await harness.bus.cancel('test:s3')).toBe(true);
    await waitFor(() => harness!.channel.sent.length === 1, 5_000, 'stopped');
    expect(harness.channel.sent[0]!.content).toBe('Stopped.');
  });

  it('reads /stop by the one rule: "/STOP now" and "/stop@bot" stop, "stop" and "/stop" with a second line are messages', async () => {
    const agent = new ScriptedAgent({
      iterationMs: (contents) => (contents.includes('long task') ? 10_000 : 10),
    });
    const harness = await start({ agent });
    for (const [i, spelling] of ['/STOP now', '/stop@magpie_bot'].entries()) {
      await harness.bus.publishInbound(inbound('s4', 'long task'));
      await waitFor(() => harness!.worker.activeTurns === 1, 5_000, 'turn running');
      await harness.bus.publishInbound(inbound('s4', spelling));
      await waitFor(() => harness!.channel.sent.length === i + 1, 5_000, `stopped by ${spelling}`);
      expect(harness.channel.sent[i]!.content).toBe('Stopped.');
    }
    await harness.bus.publishInbound(inbound('s4', 'stop'));
    await harness.bus.publishInbound(inbound('s5', '/stop\nand then this'));
    await waitFor(() => agent.turns.length === 4, 5_000, 'both queued as turns');
    expect(
      agent.turns
        .flatMap((t) => t.contents)
        .slice(2)
        .sort(),
    ).toEqual(['/stop\nand then this', 'stop']);
  });

  it('magpie send / chat: a /stop is answered by the client at once, "Stopping." or "Nothing to stop."', async () => {
    const agent = new ScriptedAgent({ iterationMs: 10_000 });
    const harness = await start({ agent });
    const idle = await sendAndWait(harness.bus, { content: ' /Stop ', chatId: 'c1', timeoutMs: 5_000 });
    expect(idle).toMatchObject({ channel: 'cli', chatId: 'c1', kind: 'reply', content: 'Nothing to stop.' });
    await harness.bus.publishInbound(inbound('c2', 'long task', { channel: 'cli' }));
    await waitFor(() => harness!.worker.activeTurns === 1, 5_000, 'turn running');
    const busy = await sendAndWait(harness.bus, { content: '/stop now', chatId: 'c2', timeoutMs: 5_000 });
    expect(busy.content).toBe('Stopping.');
    await waitFor(() => harness!.worker.activeTurns === 0, 5_000, 'turn cancelled');
  });
});
