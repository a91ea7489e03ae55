/**
 * "Acknowledged means replicated" through a failover that strikes while a
 * publish's WAIT is pending. ioredis sends an unanswered command again on its
 * next connection, and a patient connection (a worker's: its outbound
 * replies, a helper's inbound result) reaches the new master: a WAIT there
 * counts that master's writes, none of the old master's. It was answered at
 * once and the publish acknowledged, although no server left held its writes:
 * a reply lost after its turn was trimmed (the chaos bench's lost messages with
 * Sentinel). Here the master's replicas are cut off (SIGSTOPped, their links
 * dropped) before the publishes, the master is SIGKILLed while their WAITs
 * wait, and a replica takes over: both publishes must be refused, and their
 * redeliveries taken.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { Bus } from '../../../src/bus/bus.js';
import { silentLogger } from '../../../src/log/index.js';
import { type SentinelGroup, startSentinelGroup } from '../../fakes/redis-sentinel.js';
import { waitFor } from '../../fakes/wait-for.js';

/**
 * Publishes until acknowledged, as a platform redelivers and a worker redoes its turn: right after
 * the failover the connection may move once more (a Sentinel's late `+switch-master`), which
 * rightly refuses the publish it interrupted. Bounded: a few refusals, then the last one throws.
 */
async function again(bus: Bus, publish: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await publish();
    } catch (err) {
      if (attempt === 5 || (err as { code?: string }).code !== 'REDIS_UNAVAILABLE') throw err;
      await waitFor(() => bus.redis.status === 'ready', 10_000, 'the connection back');
    }
  }
}

describe('a WAIT pending when the master dies', () => {
  let group: SentinelGroup;
  const buses: Bus[] = [];

  beforeAll(async () => {
    group = await startSentinelGroup({ replicas: 2 });
  }, 30_000);

  afterAll(async () => {
    for (const replica of group?.replicas ?? []) replica.process.kill('SIGCONT');
    for (const bus of buses) await bus.close();
    await group?.stop();
  }, 30_000);

  it('refuses the publishes whose WAIT was answered by the new master, and takes their redeliveries', async () => {
    const config = parseConfig({
      REDIS_SENTINELS: group.addresses,
      REDIS_SENTINEL_NAME: group.name,
      MAGPIE_REDIS_MIN_REPLICAS: '1',
      // Long enough that the WAITs are still waiting when the master dies.
      MAGPIE_REDIS_WAIT_TIMEOUT: '15s',
      MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
      MAGPIE_WORKSPACE: os.tmpdir(),
    });
    // Patient, as a worker's bus: commands wait for the next master instead of failing. One
    // connection each: a connection blocked in WAIT holds back the commands sent after it.
    const connect = async () => {
      const bus = await Bus.connect({ config, logger: silentLogger(), patient: true });
      buses.push(bus);
      return bus;
    };
    const [helpers, worker] = [await connect(), await connect()];
    const message = {
      id: `test:c1:${randomUUID()}`,
      channel: 'test',
      chatId: 'c1',
      senderId: 'u1',
      content: 'hi',
    };
    const reply = { id: `o-${randomUUID()}`, channel: 'test', chatId: 'c1', content: 'hello' };

    // No replica can take another write from the master.
    for (const replica of group.replicas) replica.process.kill('SIGSTOP');
    const admin = new Redis(group.master.port, '127.0.0.1');
    const outcome = async (bus: Bus, publish: (bus: Bus) => Promise<void>) => {
      const id = Number(await bus.redis.client('ID'));
      const result = publish(bus).then(
        () => 'acknowledged',
        (err: unknown) => err,
      );
      await waitFor(
        async () => String(await admin.client('LIST', 'ID', id)).includes('cmd=wait'),
        10_000,
        'the publish waiting for a replica',
      );
      return { result };
    };
    let inbound: { result: Promise<unknown> };
    let outbound: { result: Promise<unknown> };
    try {
      await admin.call('CLIENT', 'KILL', 'TYPE', 'replica');
      inbound = await outcome(helpers, (bus) => bus.publishInbound(message));
      outbound = await outcome(worker, (bus) => bus.publishOutbound(reply));
    } finally {
      admin.disconnect();
    }
    const killing = group.master.kill();
    for (const replica of group.replicas) replica.process.kill('SIGCONT');
    await killing;

    for (const [what, result] of [
      ['inbound', await inbound.result],
      ['outbound', await outbound.result],
    ] as const) {
      expect(result, `the ${what} publish`).toMatchObject({ code: 'REDIS_UNAVAILABLE', transient: true });
      expect(String((result as Error).message)).toMatch(
        new RegExp(`^the ${what} message was written on a Redis connection that was made again`),
      );
    }
    // The new master holds neither (acknowledging them would have lost them): the platform delivers
    // the message again, the redone turn publishes its reply again, and both are taken.
    expect(await group.masterPort()).not.toBe(group.master.port);
    expect(await helpers.mailbox('test:c1').length()).toBe(0);
    expect(await worker.outboundQueued('test', reply.id)).toBe(false);
    await again(helpers, () => helpers.publishInbound(message));
    await again(worker, () => worker.publishOutbound(reply));
    expect(await helpers.mailbox('test:c1').length()).toBe(1);
    expect(await worker.outboundQueued('test', reply.id)).toBe(true);
  }, 60_000);
});
