/** Turn failures: transient ones are retried, permanent ones answer with an error; exactly one reply per id. */
import { describe, expect, it } from 'vitest';
import { AppError, ProviderError } from '../../../src/errors/index.js';
import { harnessPerTest, inbound, ScriptedAgent, waitFor } from './helpers.js';

/** A scripted agent whose turn number `call` (from 1) fails with `fail(call)`'s error, if any; `calls()` counts the turns. */
function countingAgent(fail: (call: number) => Error | undefined): {
  agent: ScriptedAgent;
  calls: () => number;
} {
  let calls = 0;
  const agent = new ScriptedAgent({ fail: () => fail(++calls) });
  return { agent, calls: () => calls };
}

describe('turn failures and reply ids', () => {
  const start = harnessPerTest();

  it('a transient failure is retried and then answered once', async () => {
    const { agent, calls } = countingAgent((call) =>
      call === 1 ? new ProviderError('PROVIDER_SERVER', 'server error', { transient: true }) : undefined,
    );
    const harness = await start({ agent });
    await harness.bus.publishInbound(inbound('f1', 'retry me'));
    await waitFor(() => harness!.channel.sent.length === 1, 10_000, 'reply after retry');
    expect(calls()).toBe(2);
    expect(harness.channel.sent[0]).toMatchObject({ kind: 'reply', content: 'retry me' });
    expect(await harness.bus.mailbox('test:f1').length()).toBe(0);
  });

  it('a permanent failure gives the user a clear error reply and empties the mailbox', async () => {
    const { agent, calls } = countingAgent(
      () => new ProviderError('PROVIDER_AUTH', 'the API key was refused (401): check OPENAI_API_KEY'),
    );
    const harness = await start({ agent });
    await harness.bus.publishInbound(inbound('f2', 'hello'));
    await waitFor(() => harness!.channel.sent.length === 1, 5_000, 'error reply');
    expect(harness.channel.sent[0]!.kind).toBe('error');
    expect(harness.channel.sent[0]!.content).toContain('OPENAI_API_KEY');
    expect(calls()).toBe(1);
    expect(await harness.bus.mailbox('test:f2').length()).toBe(0);
  });

  it('transient failures stop after the last attempt with an error reply (no endless loop)', async () => {
    const { agent, calls } = countingAgent(
      () => new AppError('PROVIDER_UNREACHABLE', 'endpoint unreachable', { transient: true }),
    );
    const harness = await start({ agent });
    await harness.bus.publishInbound(inbound('f3', 'hello'));
    await waitFor(() => harness!.channel.sent.length === 1, 10_000, 'error reply');
    expect(harness.channel.sent[0]!.kind).toBe('error');
    expect(calls()).toBe(3);
    expect(await harness.bus.mailbox('test:f3').length()).toBe(0);
  });

  it('an outbound id already delivered is not delivered again', async () => {
    const harness = await start({ agent: new ScriptedAgent() });
    await harness.bus.publishOutbound({ id: 'r-same', channel: 'test', chatId: 'z', content: 'once' });
    await waitFor(() => harness!.channel.sent.length === 1, 5_000, 'first delivery');
    await harness.bus.publishOutbound({ id: 'r-same', channel: 'test', chatId: 'z', content: 'once again' });
    await harness.bus.publishOutbound({ id: 'r-other', channel: 'test', chatId: 'z', content: 'other' });
    await waitFor(() => harness!.channel.sent.length >= 2, 5_000, 'second id delivered');
    expect(harness.channel.sent.map((m) => m.content)).toEqual(['once', 'other']);
  });
});
