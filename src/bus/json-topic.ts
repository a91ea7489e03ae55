/**
 * JSON on pub/sub: a payload parsed without throwing, and the subscription
 * to one channel's topic (activity, live snapshots) that hands on the
 * messages its schema accepts and logs and skips the rest.
 */
import type { z } from 'zod';
import type { Logger } from '../log/index.js';
import type { Subscriber } from './subscriber.js';

/** JSON.parse that yields undefined for bad text (the schema check then rejects it). */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Subscribes `handler` to one channel's messages; resolves with the unsubscribe. */
export type ChannelSubscribe<T> = (
  subscriber: Subscriber,
  prefix: string,
  channel: string,
  handler: (message: T) => void,
  logger: Logger,
) => Promise<() => Promise<void>>;

/**
 * The subscribe function of a per-channel JSON topic: `topic` names its
 * pub/sub channel, `schema` checks each message, and a malformed one is
 * logged as "malformed `what` skipped".
 *
 * @example export const subscribeLive = channelSubscription(keys.live, LiveUpdateSchema, 'live update');
 */
export function channelSubscription<T>(
  topic: (prefix: string, channel: string) => string,
  schema: z.ZodType<T>,
  what: string,
): ChannelSubscribe<T> {
  return (subscriber, prefix, channel, handler, logger) =>
    subscriber.subscribe(topic(prefix, channel), (payload) => {
      const parsed = schema.safeParse(safeJson(payload));
      if (parsed.success) handler(parsed.data);
      else logger.warn({ channel, payload: payload.slice(0, 200) }, `malformed ${what} skipped`);
    });
}
