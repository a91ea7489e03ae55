/**
 * "Acknowledged means replicated": after the writes a platform's "received"
 * depends on, `WAIT <min> <timeout>` on the same connection (WAIT counts the
 * replicas holding every write this connection made). Fewer confirmations
 * refuse the publish, so the channel does not acknowledge and the platform
 * delivers again; the inbound id's once-only mark makes that harmless.
 */
import type { Redis } from 'ioredis';
import { AppError, ExitCode } from '../errors/index.js';

/** MAGPIE_REDIS_MIN_REPLICAS and MAGPIE_REDIS_WAIT_TIMEOUT. */
export interface ReplicaWait {
  /** Replicas that must confirm; 0 = no WAIT at all. */
  min: number;
  timeoutMs: number;
}

/**
 * Runs `writes`, then waits until `wait.min` replicas hold them.
 *
 * WAIT counts only the writes of the server-side connection it is sent on, so
 * the writes and the WAIT must share one: when the socket changed meanwhile (a
 * reconnect, a failover), some writes may have been answered by a master that
 * is gone and never copied them, and a WAIT sent again on the new connection
 * (ioredis resends unanswered commands) confirms nothing of them. That is
 * refused too.
 *
 * @example await replicated(redis, wait, 'the inbound message', () => push(message));
 * @throws AppError REDIS_UNAVAILABLE (transient, exit 3) when fewer confirm within the timeout,
 *   or when the connection was made again between the writes and the WAIT's answer.
 */
export async function replicated<T>(
  redis: Redis,
  wait: ReplicaWait,
  what: string,
  writes: () => Promise<T>,
): Promise<T> {
  if (wait.min <= 0) return writes();
  const socket = redis.stream;
  const result = await writes();
  const confirmed = Number(await redis.call('WAIT', wait.min, wait.timeoutMs));
  if (redis.stream !== socket) {
    throw notReplicated(
      `${what} was written on a Redis connection that was made again before its WAIT was answered (a reconnect or a failover)`,
    );
  }
  if (confirmed < wait.min) {
    throw notReplicated(
      `${what} reached ${confirmed} of the ${wait.min} Redis replica(s) MAGPIE_REDIS_MIN_REPLICAS asks for within ${wait.timeoutMs} ms`,
    );
  }
  return result;
}

function notReplicated(why: string): AppError {
  return new AppError('REDIS_UNAVAILABLE', `${why}: not acknowledged, the platform will deliver it again`, {
    transient: true,
    exitCode: ExitCode.unavailable,
  });
}
