/**
 * Two attempts of one turn can overlap: a lock lost while Redis was away lets
 * a second worker take the turn job while the first still runs. Each trims
 * only the mailbox entries it read, whichever trims first; a message that
 * arrived after both reads stays for the next turn (a count alone took it).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Bus } from '../../../src/bus/bus.js';
import { silentLogger } from '../../../src/log/index.js';
import { InboundMessageSchema } from '../../../src/messages/messages.js';
import { inbound, testConfig } from './helpers.js';

const buses: Bus[] = [];
afterEach(async () => {
  for (const bus of buses.splice(0)) await bus.close();
});

/** A mailbox holding `one`, `two`, `three`; attempt A read `one`, attempt B read `one` and `two`. */
async function overlapping() {
  const bus = await Bus.connect({ config: testConfig(), logger: silentLogger() });
  buses.push(bus);
  const mailbox = bus.mailbox('test:t1');
  for (const text of ['one', 'two', 'three'])
    await mailbox.push(InboundMessageSchema.parse(inbound('t1', text)));
  const all = await mailbox.read(0);
  const [a, b] = [all.entries.slice(0, 1), all.entries.slice(0, 2)];
  const contents = async () => (await mailbox.read(0)).messages.map((m) => m.content);
  return {
    trimA: () => mailbox.trim(a),
    trimB: () => mailbox.trim(b),
    contents,
  };
}

describe('overlapping attempts of one turn', () => {
  it('the longer read trims first: the shorter one then removes nothing more', async () => {
    const { trimA, trimB, contents } = await overlapping();
    await trimB();
    await trimA();
    expect(await contents()).toEqual(['three']);
  });

  it('the shorter read trims first: the longer one removes only the rest of what it read', async () => {
    const { trimA, trimB, contents } = await overlapping();
    await trimA();
    await trimB();
    expect(await contents()).toEqual(['three']);
  });
});
