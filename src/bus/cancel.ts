/**
 * `/stop` across processes: the gateway publishes the session key on
 * `<prefix>:cancel`; the worker running that session's turn aborts it.
 * The session's running-turn record (running-turns.ts) tells the sender
 * whether there was anything to stop.
 */
import type { Redis } from 'ioredis';
import { keys } from './keys.js';
import type { Subscriber } from './subscriber.js';

/** Publishes a cancellation; true when a turn of that session is running. */
export async function publishCancel(redis: Redis, prefix: string, sessionKey: string): Promise<boolean> {
  const running = await redis.exists(keys.running(prefix, sessionKey));
  await redis.publish(keys.cancel(prefix), sessionKey);
  return running > 0;
}

/** Calls `handler(sessionKey)` for every cancellation. Returns the unsubscribe. */
export function subscribeCancel(
  subscriber: Subscriber,
  prefix: string,
  handler: (sessionKey: string) => void,
): Promise<() => Promise<void>> {
  return subscriber.subscribe(keys.cancel(prefix), handler);
}
