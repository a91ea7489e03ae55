/**
 * Sends that a platform accepted and reported failed afterwards (WhatsApp
 * answers a send with a message id and tells of its failure later, in a
 * status callback): a capped list in Redis, newest first, that `magpie
 * status` and the dashboard show among the errors. A send refused at once is
 * a failed outbound job instead, which they show already.
 */
import type { Redis } from 'ioredis';
import { keys } from './keys.js';

/** How many failures the list keeps. */
export const DELIVERY_FAILURES_KEPT = 50;

/** One failed delivery. */
export interface DeliveryFailure {
  /** When the platform reported it (ms since the epoch). */
  at: number;
  /** The channel's name (`whatsapp`). */
  channel: string;
  /** The chat the message was for. */
  chatId: string;
  /** The platform's message id. */
  messageId: string;
  /** Why, as the platform said it (an error code and title). */
  reason: string;
}

/** The newest `count` delivery failures, newest first (entries that do not parse are skipped). */
export async function readDeliveryFailures(
  redis: Redis,
  prefix: string,
  count = 10,
): Promise<DeliveryFailure[]> {
  const raw = await redis.lrange(keys.deliveryFailures(prefix), 0, Math.max(0, count - 1));
  return raw.flatMap((text) => {
    try {
      const value = JSON.parse(text) as Partial<DeliveryFailure>;
      if (typeof value.at !== 'number' || typeof value.channel !== 'string') return [];
      return [
        {
          at: value.at,
          channel: value.channel,
          chatId: String(value.chatId ?? ''),
          messageId: String(value.messageId ?? ''),
          reason: String(value.reason ?? ''),
        },
      ];
    } catch {
      return [];
    }
  });
}
