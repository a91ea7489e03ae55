/**
 * The bus's record of the workspace it serves: `<prefix>:workspace` holds the
 * workspace id (see workspace/identity.ts), set once by the first process
 * that starts and never changed, so every later one can check it shares it.
 */
import type { Redis } from 'ioredis';
import { keys } from './keys.js';

/**
 * Records `id` as the bus's workspace when none is recorded yet; resolves to
 * the recorded id (this one, or the one recorded before).
 *
 * @example if ((await claimWorkspace(bus.redis, bus.prefix, id)) !== id) refuse();
 */
export async function claimWorkspace(redis: Redis, prefix: string, id: string): Promise<string> {
  const key = keys.workspace(prefix);
  if ((await redis.set(key, id, 'NX')) === 'OK') return id;
  // Set once and never changed: whoever won the race, this reads its id.
  return (await redis.get(key)) ?? id;
}

/** The id of the workspace the bus serves, or undefined before any process started on it. */
export async function recordedWorkspace(redis: Redis, prefix: string): Promise<string | undefined> {
  return (await redis.get(keys.workspace(prefix))) ?? undefined;
}
