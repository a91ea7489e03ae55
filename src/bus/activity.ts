/**
 * Turn activity per channel: the worker publishes `{ chatId, threadId, active }`
 * on `<prefix>:activity:<channel>` when a turn starts and ends; the gateway
 * shows typing in that chat meanwhile.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { channelSubscription } from './json-topic.js';
import { keys } from './keys.js';

export const ActivityEventSchema = z.object({
  chatId: z.string().min(1),
  threadId: z.string().min(1).optional(),
  active: z.boolean(),
});
export type ActivityEvent = z.infer<typeof ActivityEventSchema>;

export async function publishActivity(
  redis: Redis,
  prefix: string,
  channel: string,
  event: ActivityEvent,
): Promise<void> {
  await redis.publish(keys.activity(prefix, channel), JSON.stringify(event));
}

/** Subscribes to a channel's activity; malformed events are logged and skipped. */
export const subscribeActivity = channelSubscription(keys.activity, ActivityEventSchema, 'activity event');

// Re-exported for the files that still import it from here; it lives in json-topic.ts.
