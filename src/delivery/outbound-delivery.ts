/**
 * Outbound delivery (gateway side): one consumer per channel on
 * `outbound-<channel>` calling `channel.send`, plus the subscriptions that
 * show what a turn of that chat is doing: activity (typing) and live reply
 * snapshots (`channel.preview`, when the channel has one and streams). DELIVERY_PERMANENT fails
 * the job at once; any other failure is retried with exponential backoff.
 *
 * A chat's messages go out in the order they were queued: one whose chat has
 * an earlier message still to send (on a gateway that died, or waiting for a
 * retry) is held back, out of the delivery slots, until that one is sent or
 * failed for good (bus/outbound-order.ts). Other chats are not held.
 */

import type { ConsumedJob, Consumer, ConsumerTuning } from '../bus/consumer.js';
import type { ChatOrder } from '../bus/outbound-order.js';
import { outboundQueueName } from '../bus/queues.js';
import type { Channel } from '../channels/types.js';
import { AppError, describeError, hasCode } from '../errors/index.js';
import { positiveWholeNumber } from '../errors/option-checks.js';
import { runAll } from '../lifecycle/run-all.js';
import type { Logger } from '../log/index.js';
import { type OutboundMessage, OutboundMessageSchema } from '../messages/messages.js';
import { NO_TRACING, type Tracing, traceOf } from '../telemetry/tracing.js';
import type { DeliveryBus } from './ports.js';

export interface OutboundDeliveryOptions {
  bus: DeliveryBus;
  channel: Channel;
  logger: Logger;
  /** Whether live reply snapshots are shown (config `streamsTo`). @defaultValue true */
  live?: boolean;
  /** Messages delivered at once. @defaultValue 8 */
  concurrency?: number;
  tuning?: ConsumerTuning;
  /** A span per platform send, a child of the outbound publish the message carries. @defaultValue off */
  tracing?: Tracing;
  /**
   * How long a message held behind an earlier one of its chat waits before it
   * looks again, ms. The earlier one's end releases it at once; this only
   * bounds the wait when whoever sends that one dies first. @defaultValue 5000
   */
  holdMs?: number;
}

/** What one delivery needs besides the job. */
interface Sending {
  channel: Channel;
  logger: Logger;
  tracing: Tracing;
  order: ChatOrder;
  holdMs: number;
}

/** Delivers one channel's outbound queue until closed. */
export class OutboundDelivery {
  private readonly consumer: Consumer;
  private readonly logger: Logger;
  private readonly unsubscribes: (() => Promise<void>)[] = [];
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly options: OutboundDeliveryOptions,
    consumer: Consumer,
  ) {
    this.consumer = consumer;
    this.logger = options.logger;
  }

  /** Subscribes to the channel's activity and starts consuming `outbound-<channel>`. */
  static async start(options: OutboundDeliveryOptions): Promise<OutboundDelivery> {
    const { bus, channel } = options;
    const logger = options.logger.child({ channel: channel.name });
    const sending: Sending = {
      channel,
      logger,
      tracing: options.tracing ?? NO_TRACING,
      order: bus.outboundOrder(channel.name),
      holdMs: positiveWholeNumber('holdMs', options.holdMs ?? 5_000),
    };
    const consumer = bus.consume(outboundQueueName(channel.name), (job) => deliver(job, sending), {
      concurrency: options.concurrency ?? 8,
      ...options.tuning,
    });
    const delivery = new OutboundDelivery({ ...options, logger }, consumer);
    delivery.unsubscribes.push(
      await bus.onActivity(channel.name, (event) => {
        if (event.active) channel.startActivity(event.chatId, event.threadId);
        else channel.stopActivity(event.chatId, event.threadId);
      }),
    );
    const preview = channel.preview?.bind(channel);
    if (preview && options.live !== false) {
      delivery.unsubscribes.push(
        await bus.onLive(channel.name, (update) => {
          preview(update).catch((err: unknown) =>
            logger.warn({ turn: update.turn, err: describeError(err) }, 'live preview failed'),
          );
        }),
      );
    }
    await consumer.ready();
    return delivery;
  }

  /**
   * Resolves once nothing waits in the channel's queue (true), or after
   * `timeoutMs` (false): on BullMQ's `drained` event, not by polling.
   * Deliveries in flight are then finished by `close()`.
   */
  async drained(timeoutMs: number): Promise<boolean> {
    let unsubscribe: (() => void) | undefined;
    let timer: NodeJS.Timeout | undefined;
    // Listening first: a drain between the count and the subscription is not missed.
    const event = new Promise<boolean>((resolve) => {
      unsubscribe = this.consumer.onDrained(() => resolve(true));
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      const queue = outboundQueueName(this.options.channel.name);
      const waiting = await this.options.bus.pendingJobs(queue, ['waiting']).catch((err: unknown) => {
        this.logger.debug({ err: describeError(err) }, 'could not count waiting deliveries');
        return 0;
      });
      return waiting === 0 ? true : await event;
    } finally {
      clearTimeout(timer);
      unsubscribe?.();
    }
  }

  /** Stops consuming (deliveries in flight finish) and the subscriptions. Idempotent. */
  close(): Promise<void> {
    this.closing ??= runAll([
      () => this.consumer.close(),
      ...this.unsubscribes.map(
        (unsubscribe) => () =>
          unsubscribe().catch((err: unknown) =>
            this.logger.debug({ err: describeError(err) }, 'unsubscribe failed'),
          ),
      ),
    ]);
    return this.closing;
  }

  get channel(): Channel {
    return this.options.channel;
  }
}

async function deliver(job: ConsumedJob, sending: Sending): Promise<void> {
  const { logger, order } = sending;
  const parsed = OutboundMessageSchema.safeParse(job.data);
  if (!parsed.success) {
    logger.warn(
      { job: job.id, issue: parsed.error.issues[0]?.message },
      'malformed outbound message moved aside',
    );
    throw new AppError('INVALID_MESSAGE', `malformed outbound message ${job.id}`);
  }
  const message = parsed.data;
  if (!(await order.isNext(message.chatId, job.id)) && (await order.hold(message.chatId, job.id))) {
    await job.postpone(sending.holdMs);
    logger.debug({ job: job.id, chat: message.chatId }, 'held behind an earlier message of its chat');
    // Not settled: the delay brings it back to look again.
    await order
      .settle(message.chatId, job.id)
      .catch((err: unknown) =>
        logger.warn({ job: job.id, err: describeError(err) }, 'could not settle a hold'),
      );
    return;
  }
  let finished = true;
  try {
    await send(message, job, sending);
  } catch (err) {
    // A retry keeps its place at the head; failed for good, it lets the next one go.
    finished = !(err instanceof AppError && err.transient) || job.attemptsMade + 1 >= job.maxAttempts;
    throw err;
  } finally {
    // Not left: the next message of the chat finds this one finished and goes (after its hold).
    if (finished)
      await order
        .done(message.chatId, job.id)
        .catch((err: unknown) =>
          logger.warn({ job: job.id, err: describeError(err) }, 'could not release the next message'),
        );
  }
}

async function send(message: OutboundMessage, job: ConsumedJob, sending: Sending): Promise<void> {
  const { channel, logger } = sending;
  const span = sending.tracing.start(`send ${channel.name}`, {
    kind: 'client',
    parent: traceOf(message.metadata),
    attributes: {
      'messaging.system': 'bullmq',
      'messaging.operation.type': 'process',
      'messaging.destination.name': outboundQueueName(channel.name),
      'magpie.channel': channel.name,
      'magpie.message.kind': message.kind,
    },
  });
  try {
    await channel.send(message);
  } catch (err) {
    span.fail(hasCode(err, 'DELIVERY_PERMANENT') ? 'DELIVERY_PERMANENT' : 'DELIVERY_TRANSIENT');
    if (hasCode(err, 'DELIVERY_PERMANENT') || hasCode(err, 'INVALID_MESSAGE')) {
      logger.warn(
        { job: job.id, chat: message.chatId, err: describeError(err) },
        'delivery refused; not retried',
      );
      throw new AppError('DELIVERY_PERMANENT', describeError(err), { cause: err });
    }
    throw new AppError('DELIVERY_TRANSIENT', describeError(err), { cause: err, transient: true });
  } finally {
    span.end();
  }
}
