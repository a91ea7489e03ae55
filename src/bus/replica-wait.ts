/**
 * "Acknowledged means replicated": after the writes a platform's "received"
 * depends on, `WAIT <min> <timeout>` on the same connection (WAIT counts the
 * replicas holding every write this connection made). Fewer confirmations
 * refuse the publish, so the channel does not acknowledge and the platform
 * delivers again; the inbound id's once-only mark makes that harmless.
 */
import type { Redis } from 'ioredis';
import { AppError, ExitCode } from '../errors/index.js';
import { isCluster, slotConnection } from './redis.js';

/** MAGPIE_REDIS_MIN_REPLICAS and MAGPIE_REDIS_WAIT_TIMEOUT. */
export interface ReplicaWait {
  /** Replicas that must confirm; 0 = no WAIT at all. */
  min: number;
  timeoutMs: number;
  /**
   * On a Redis Cluster, a key of the slot the writes go to: the WAIT goes to the node
   * connection of the master serving it. One magpie's keys all share their prefix's
   * hash tag, so the prefix itself will do. Unused elsewhere.
   */
  slotKey?: string;
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
 * On a Cluster, WAIT names no key, so the Cluster client cannot route it: it goes
 * straight to the node connection the writes went out on, that of the master
 * serving `wait.slotKey`'s slot. When another master serves that slot once the
 * writes are answered (a failover moved it: some writes may have gone to the old
 * one), the publish is refused as well.
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
  if (isCluster(redis) && wait.slotKey === undefined)
    throw new TypeError('replicated() on a Cluster needs the slot key of the writes');
  const slotKey = wait.slotKey ?? ''; // used on a Cluster only
  const writer = slotConnection(redis, slotKey);
  const socket = writer?.stream;
  const made = writer ? socketsMade(writer) : 0;
  const result = await writes();
  const node = slotConnection(redis, slotKey);
  if (!node || node !== writer) {
    throw notReplicated(
      `${what} was written while the Redis Cluster moved its slot to another master (a failover)`,
    );
  }
  const confirmed = Number(await node.call('WAIT', wait.min, wait.timeoutMs));
  // A Cluster's node connection is made by its first command: then the writes' socket is its first one.
  const oneSocket = socket ? node.stream === socket : socketsMade(node) === made + 1;
  if (!oneSocket) {
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

/** Sockets each connection has connected, counted from when {@link socketsMade} first saw it. */
const socketCounts = new WeakMap<Redis, { made: number }>();

function socketsMade(connection: Redis): number {
  let count = socketCounts.get(connection);
  if (!count) {
    const counted = { made: 0 };
    connection.on('connect', () => {
      counted.made += 1;
    });
    socketCounts.set(connection, counted);
    count = counted;
  }
  return count.made;
}

function notReplicated(why: string): AppError {
  return new AppError('REDIS_UNAVAILABLE', `${why}: not acknowledged, the platform will deliver it again`, {
    transient: true,
    exitCode: ExitCode.unavailable,
  });
}
