/** Malformed payloads are logged and moved aside; the worker keeps serving. */
import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { keys } from '../../../src/bus/keys.js';
import { harnessPerTest, inbound, ScriptedAgent, waitFor } from './helpers.js';

describe('malformed payloads', () => {
  const start = harnessPerTest();

  it('a malformed turn job fails without retry and the worker keeps serving', async () => {
    const agent = new ScriptedAgent();
    const harness = await start({ agent });
    const queue = new Queue('inbound', {
      connection: harness.bus.createWorkerConnection(),
      prefix: harness.bus.prefix,
    });
    try {
      const bad = await queue.add('turn', { nonsense: 42 }, { attempts: 3 });
      await harness.bus.publishInbound(inbound('m1', 'still here'));
      await waitFor(() => harness!.channel.sent.length === 1, 5_000, 'reply after the bad job');
      expect(harness.channel.sent[0]!.content).toBe('still here');
      await waitFor(async () => (await queue.getJobState(bad.id!)) === 'failed', 5_000, 'bad job failed');
      const failed = await queue.getJob(bad.id!);
      expect(failed?.attemptsMade).toBe(1);
    } finally {
      await queue.close();
    }
  });

  it('a malformed mailbox entry is moved to the dead list; the valid ones are answered', async () => {
    const agent = new ScriptedAgent();
    const harness = await start({ agent });
    const { bus } = harness;
    await bus.redis.rpush(
      keys.mailbox(bus.prefix, 'test:m2'),
      '{not json',
      JSON.stringify({ id: 'x', channel: 'BAD' }),
    );
    await bus.publishInbound(inbound('m2', 'valid'));
    await waitFor(() => harness!.channel.sent.length === 1, 5_000, 'reply');
    expect(agent.turns.flatMap((t) => t.contents)).toEqual(['valid']);
    expect(await bus.redis.llen(keys.dead(bus.prefix))).toBe(2);
    expect(await bus.mailbox('test:m2').length()).toBe(0);
  });

  it('publishInbound rejects an invalid message with INVALID_MESSAGE and queues nothing', async () => {
    const harness = await start({ agent: new ScriptedAgent() });
    await expect(
      harness.bus.publishInbound({ id: '', channel: 'test', chatId: 'x', content: 'hi' }),
    ).rejects.toMatchObject({
      code: 'INVALID_MESSAGE',
    });
    expect(await harness.bus.pendingJobs('inbound')).toBe(0);
  });

  it('a malformed outbound job is moved aside without retries; later messages are delivered', async () => {
    const harness = await start({ agent: new ScriptedAgent() });
    const queue = new Queue('outbound-test', {
      connection: harness.bus.createWorkerConnection(),
      prefix: harness.bus.prefix,
    });
    try {
      const bad = await queue.add('send', { content: 42 }, { attempts: 5 });
      await harness.bus.publishOutbound({ id: 'o-1', channel: 'test', chatId: 'z', content: 'fine' });
      await waitFor(() => harness!.channel.sent.length === 1, 5_000, 'good message delivered');
      await waitFor(
        async () => (await queue.getJobState(bad.id!)) === 'failed',
        5_000,
        'bad outbound failed',
      );
      expect((await queue.getJob(bad.id!))?.attemptsMade).toBe(1);
    } finally {
      await queue.close();
    }
  });
});
