/**
 * A turn removes from its session's mailbox exactly the entries it read. Two
 * workers can run one session's turn at once (a lock lost while Redis failed
 * over: the job stalled and was handed out again); when the trim removed the
 * first N entries, the second trim removed messages that had arrived after
 * the first turn's trim and that no turn answered (the chaos bench with
 * Sentinel lost them, acknowledged and never answered).
 */
import { describe, expect, it } from 'vitest';
import { Bus } from '../../../src/bus/bus.js';
import { keys } from '../../../src/bus/keys.js';
import { silentLogger } from '../../../src/log/index.js';
import { InboundMessageSchema } from '../../../src/messages/messages.js';
import { inbound, testConfig } from './helpers.js';

describe('the mailbox trim', () => {
  it('leaves the messages that arrived after two turns of one session read theirs', async () => {
    const config = testConfig();
    const bus = await Bus.connect({ config, logger: silentLogger() });
    try {
      const mailbox = bus.mailbox('test:t1');
      const push = (content: string) => mailbox.push(InboundMessageSchema.parse(inbound('t1', content)));
      await push('a');
      await push('b');
      // Both turns read the same head; the second drains a message that arrives meanwhile.
      const first = await mailbox.read(0);
      const second = await mailbox.read(0);
      await push('c');
      const drained = await mailbox.read(second.entries.length);
      expect(drained.messages.map((m) => m.content)).toEqual(['c']);

      await mailbox.trim(first.entries);
      await push('d');
      await mailbox.trim([...second.entries, ...drained.entries]);

      const left = await mailbox.read(0);
      expect(left.messages.map((m) => m.content)).toEqual(['d']);
      expect(await bus.redis.smembers(keys.pendingMailboxes(config.redis.prefix))).toEqual(['test:t1']);
    } finally {
      await bus.close();
    }
  });
});
