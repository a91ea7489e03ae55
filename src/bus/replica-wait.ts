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
 * Waits until `wait.min` replicas hold this connection's writes so far.
 *
 * @throws AppError REDIS_UNAVAILABLE (transient, exit 3) when fewer confirm within the timeout.
 */
export async function waitForReplicas(redis: Redis, wait: ReplicaWait, what: string): Promise<void> {
  if (wait.min <= 0) return;
  const confirmed = Number(await redis.call('WAIT', wait.min, wait.timeoutMs));
  if (confirmed < wait.min) {
    throw new AppError(
      'REDIS_UNAVAILABLE',
      `${what} reached ${confirmed} of the ${wait.min} Redis replica(s) MAGPIE_REDIS_MIN_REPLICAS asks for within ${wait.timeoutMs} ms: not acknowledged, the platform will deliver it again`,
      { transient: true, exitCode: ExitCode.unavailable },
    );
  }
}
