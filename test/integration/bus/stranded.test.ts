/**
 * A turn job that fails for good (stalled past its limit, its attempts spent
 * while Redis was away) must not strand its session's messages: the turn
 * worker's sweep wakes every session whose mailbox still holds messages.
 */
import { UnrecoverableError, Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { Bus } from '../../../src/bus/bus.js';
import { keys } from '../../../src/bus/keys.js';
import { INBOUND_QUEUE } from '../../../src/bus/queues.js';
import { silentLogger } from '../../../src/log/index.js';
import { InboundMessageSchema } from '../../../src/messages/messages.js';
import { harnessPerTest, inbound, ScriptedAgent, testConfig, waitFor } from './helpers.js';

describe('stranded mailboxes', () => {
  const start = harnessPerTest();

  it('a message whose turn job failed for good is still answered, by the sweep on worker start', async () => {
    const config = testConfig();
    const platform = await Bus.connect({ config, logger: silentLogger() });
    const taker = new Worker(INBOUND_QUEUE, null, {
      connection: platform.createWorkerConnection(),
      prefix: config.redis.prefix,
    });
    try {
      await platform.publishInbound(inbound('s1', 'hello'));
      // As the stalled-job checker does to a job whose workers kept dying: failed, no attempt left.
      const job = await taker.getNextJob('token');
      expect(job?.data).toEqual({ sessionKey: 'test:s1' });
      await job!.moveToFailed(new UnrecoverableError('job stalled more than allowable limit'), 'token');
      expect(await job!.getState()).toBe('failed');
      expect(await platform.mailbox('test:s1').length()).toBe(1);

      const harness = await start({ agent: new ScriptedAgent(), config });
      await waitFor(() => harness.channel.sent.length === 1, 5_000, 'the stranded message answered');
      expect(harness.channel.sent[0]!.content).toBe('hello');
      await waitFor(
        async () => (await platform.redis.scard(keys.pendingMailboxes(config.redis.prefix))) === 0,
        5_000,
        'the session gone from the pending set once its mailbox is empty',
      );
    } finally {
      await taker.close();
      await platform.close();
    }
  });

  it('a session is in the pending set while its mailbox holds messages, and leaves it when trimmed empty', async () => {
    const config = testConfig();
    const bus = await Bus.connect({ config, logger: silentLogger() });
    try {
      const pending = keys.pendingMailboxes(config.redis.prefix);
      const mailbox = bus.mailbox('test:p1');
      await mailbox.push(InboundMessageSchema.parse(inbound('p1', 'one')));
      await mailbox.push(InboundMessageSchema.parse(inbound('p1', 'two')));
      expect(await bus.redis.smembers(pending)).toEqual(['test:p1']);
      const [one, two] = (await mailbox.read(0)).entries;
      await mailbox.trim([one!]);
      expect(await bus.redis.smembers(pending)).toEqual(['test:p1']);
      await mailbox.trim([two!]);
      expect(await bus.redis.smembers(pending)).toEqual([]);
      expect(await bus.wakePendingMailboxes()).toBe(0);
    } finally {
      await bus.close();
    }
  });

  it("an older magpie's mailbox, never in the pending set, is adopted once and answered", async () => {
    const config = testConfig();
    const platform = await Bus.connect({ config, logger: silentLogger() });
    try {
      // As an older magpie left it: the message in its mailbox, no pending set, no turn job.
      const message = InboundMessageSchema.parse(inbound('old1', 'from before the upgrade'));
      await platform.redis.rpush(keys.mailbox(config.redis.prefix, 'test:old1'), JSON.stringify(message));
      expect(await platform.redis.scard(keys.pendingMailboxes(config.redis.prefix))).toBe(0);
      const harness = await start({ agent: new ScriptedAgent(), config });
      await waitFor(() => harness.channel.sent.length === 1, 5_000, 'the older mailbox answered');
      expect(harness.channel.sent[0]!.content).toBe('from before the upgrade');
      expect(await platform.redis.get(keys.pendingMailboxesAdopted(config.redis.prefix))).toBe('1');
    } finally {
      await platform.close();
    }
  });
});
