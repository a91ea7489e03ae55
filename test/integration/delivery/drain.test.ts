/**
 * Shutdown waits for a channel's outbound queue on BullMQ's `drained` event,
 * not a poll: `Delivery.drained()` resolves true once nothing waits (at once
 * for an empty queue), and false when the time runs out first.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Bus } from '../../../src/bus/bus.js';
import { outboundQueueName } from '../../../src/bus/queues.js';
import { OutboundDelivery } from '../../../src/delivery/outbound-delivery.js';
import { silentLogger } from '../../../src/log/index.js';
import type { OutboundMessage } from '../../../src/messages/messages.js';
import { RecordingChannel, testConfig } from '../bus/helpers.js';

/** A channel whose sends wait until `open()`. */
class GatedChannel extends RecordingChannel {
  private release: (() => void) | undefined;
  private readonly gate = new Promise<void>((resolve) => {
    this.release = resolve;
  });
  open(): void {
    this.release?.();
  }
  override async send(message: OutboundMessage): Promise<void> {
    await this.gate;
    await super.send(message);
  }
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function setUp(channel: RecordingChannel) {
  const logger = silentLogger();
  const bus = await Bus.connect({ config: testConfig(), logger });
  closers.push(() => bus.close());
  const delivery = await OutboundDelivery.start({ bus, channel, logger, concurrency: 1 });
  closers.push(() => delivery.close());
  return { bus, delivery };
}

async function publish(bus: Bus, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await bus.publishOutbound({ id: `r${i}`, channel: 'test', chatId: 'c', content: `reply ${i}` });
  }
}

describe('Delivery.drained', () => {
  it('is true at once for an empty queue', async () => {
    const { delivery } = await setUp(new RecordingChannel('test'));
    const started = Date.now();
    expect(await delivery.drained(5_000)).toBe(true);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('resolves true when the last waiting reply is taken, not before', async () => {
    const channel = new GatedChannel('test');
    const { bus, delivery } = await setUp(channel);
    await publish(bus, 4);
    let settled = false;
    const drained = delivery.drained(10_000).then((result) => {
      settled = true;
      return result;
    });
    expect(await bus.pendingJobs(outboundQueueName('test'), ['waiting'])).toBeGreaterThan(0);
    expect(settled).toBe(false);
    channel.open();
    expect(await drained).toBe(true);
    expect(await bus.pendingJobs(outboundQueueName('test'), ['waiting'])).toBe(0);
    await delivery.close(); // finishes the reply in flight
    expect(channel.sent.map((m) => m.content)).toEqual(['reply 0', 'reply 1', 'reply 2', 'reply 3']);
  });

  it('is false when replies still wait after the time given', async () => {
    const channel = new GatedChannel('test');
    const { bus, delivery } = await setUp(channel);
    await publish(bus, 3);
    expect(await delivery.drained(300)).toBe(false);
    expect(await bus.pendingJobs(outboundQueueName('test'), ['waiting'])).toBeGreaterThan(0);
    channel.open();
  });
});
