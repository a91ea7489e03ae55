/**
 * `/stop` across processes: the gateway publishes the session key on
 * `<prefix>:cancel`; the worker running that session's turn aborts it.
 * `<prefix>:running:<session>` marks a running turn, so the sender knows
 * whether there was anything to stop.
 */
import type { Redis } from 'ioredis';
import { keys } from './queues.js';
import type { Subscriber } from './subscriber.js';

/** How long a running-turn marker survives a crashed worker. */
const RUNNING_TTL_SECONDS = 15 * 60;

/** Publishes a cancellation; true when a turn of that session is running. */
export async function publishCancel(redis: Redis, prefix: string, sessionKey: string): Promise<boolean> {
  const running = await redis.exists(keys.running(prefix, sessionKey));
  await redis.publish(keys.cancel(prefix), sessionKey);
  return running > 0;
}

/** Marks a session's turn as running (cleared by {@link clearRunning}). */
export async function markRunning(
  redis: Redis,
  prefix: string,
  sessionKey: string,
  owner: string,
): Promise<void> {
  await redis.set(keys.running(prefix, sessionKey), owner, 'EX', RUNNING_TTL_SECONDS);
}

export async function clearRunning(redis: Redis, prefix: string, sessionKey: string): Promise<void> {
  await redis.del(keys.running(prefix, sessionKey));
}

/** Calls `handler(sessionKey)` for every cancellation. Returns the unsubscribe. */
export function subscribeCancel(
  subscriber: Subscriber,
  prefix: string,
  handler: (sessionKey: string) => void,
): Promise<() => Promise<void>> {
  return subscriber.subscribe(keys.cancel(prefix), handler);
}
