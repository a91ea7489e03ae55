/**
 * Turn activity per channel: the worker publishes `{ chatId, threadId, active }`
 * on `<prefix>:activity:<channel>` when a turn starts and ends; the gateway
 * shows typing in that chat meanwhile.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { Logger } from '../log/index.js';
import { keys } from './keys.js';
import type { Subscriber } from './subscriber.js';

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
export function subscribeActivity(
  subscriber: Subscriber,
  prefix: string,
  channel: string,
  handler: (event: ActivityEvent) => void,
  logger: Logger,
): Promise<() => Promise<void>> {
  return subscriber.subscribe(keys.activity(prefix, channel), (payload) => {
    const parsed = ActivityEventSchema.safeParse(safeJson(payload));
    if (parsed.success) handler(parsed.data);
    else logger.warn({ channel, payload: payload.slice(0, 200) }, 'malformed activity event skipped');
  });
}

/** JSON.parse that yields undefined for bad text (the schema check then rejects it). */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
