/**
 * What the turn worker needs of the bus: the methods it calls, no more. The
 * Bus (src/bus/bus.ts) implements it; the composition root passes it in.
 */
import type { ActivityEvent } from '../bus/activity.js';
import type { Consumer, ConsumerTuning, JobProcessor } from '../bus/consumer.js';
import type { Mailbox } from '../bus/mailbox.js';
import type { TurnRecorder, TurnRecorderOptions } from '../bus/turn-recorder.js';
import type { LiveUpdate } from '../messages/live-update.js';
import type { OutboundMessageInput } from '../messages/messages.js';

export interface TurnBus {
  /** Takes jobs of `queue` (the turn jobs of `inbound`). */
  consume(queue: string, processor: JobProcessor, tuning?: ConsumerTuning): Consumer;
  /** A session's mailbox: the pending messages of its turn. */
  mailbox(sessionKey: string): Mailbox;
  publishOutbound(input: OutboundMessageInput): Promise<void>;
  publishLive(update: LiveUpdate): Promise<void>;
  publishActivity(channel: string, event: ActivityEvent): Promise<void>;
  /** `/stop` requests; returns the unsubscribe. */
  onCancel(handler: (sessionKey: string) => void): Promise<() => Promise<void>>;
  turnRecorder(options: Omit<TurnRecorderOptions, 'redis' | 'prefix'>): TurnRecorder;
}
