/**
 * What outbound delivery needs of the bus: the methods it calls, no more. The
 * Bus (src/bus/bus.ts) implements it; the composition root passes it in.
 */
import type { Consumer, ConsumerTuning, JobProcessor } from '../bus/consumer.js';
import type { ChatOrder } from '../bus/outbound-order.js';
import type { LiveUpdate } from '../messages/live-update.js';

export interface DeliveryBus {
  /** Takes jobs of `queue` (a channel's `outbound-<channel>`). */
  consume(queue: string, processor: JobProcessor, tuning?: ConsumerTuning): Consumer;
  /** Turn start/stop events of one channel (typing); returns the unsubscribe. */
  onActivity(
    channel: string,
    handler: (e: { chatId: string; threadId?: string; active: boolean }) => void,
  ): Promise<() => Promise<void>>;
  /** Live reply snapshots of one channel; returns the unsubscribe. */
  onLive(channel: string, handler: (update: LiveUpdate) => void): Promise<() => Promise<void>>;
  /** The per-chat order of a channel's outbound messages. */
  outboundOrder(channel: string): ChatOrder;
  /** Jobs of a queue in the given states (draining before shutdown). */
  pendingJobs(
    queue: string,
    states?: Array<'waiting' | 'active' | 'delayed' | 'prioritized'>,
  ): Promise<number>;
}
