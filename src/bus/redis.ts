/**
 * Redis connections for the bus. BullMQ workers get connections that wait
 * forever for Redis (`maxRetriesPerRequest: null`); producers fail fast when
 * Redis is away, so a channel can report the failure instead of hanging.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { AppError, ExitCode } from '../errors/index.js';

/** How long a producer waits for a connection before giving up. */
export const PRODUCER_CONNECT_TIMEOUT_MS = 5_000;

/** Options for a producer: no offline queue, one retry per command, a short connect timeout. */
export function producerOptions(): RedisOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: PRODUCER_CONNECT_TIMEOUT_MS,
    lazyConnect: true,
  };
}

/** Options for a BullMQ worker (or subscriber): commands wait for Redis to come back. */
export function workerOptions(): RedisOptions {
  return { maxRetriesPerRequest: null, enableOfflineQueue: true };
}

/** A URL safe to print: the password is replaced. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<invalid url>';
  }
}

/** The error every command reports when Redis cannot be reached (exit 3). */
export function redisUnavailable(url: string, cause?: unknown): AppError {
  const reason = cause instanceof Error ? `: ${cause.message.split('\n')[0]}` : '';
  return new AppError('REDIS_UNAVAILABLE', `Redis at ${displayUrl(url)} is unreachable${reason}`, {
    cause,
    transient: true,
    exitCode: ExitCode.unavailable,
  });
}

/**
 * Opens the bus's main connection and waits until it is ready. Rejects with
 * REDIS_UNAVAILABLE when Redis does not answer within the connect timeout.
 * A `patient` connection (workers) later waits for Redis to come back instead
 * of failing commands, so a Redis restart does not use up turn attempts.
 */
export async function connectProducer(url: string, patient = false): Promise<Redis> {
  const options = patient
    ? { ...workerOptions(), lazyConnect: true, connectTimeout: PRODUCER_CONNECT_TIMEOUT_MS }
    : producerOptions();
  const redis = new Redis(url, options);
  // Errors are surfaced through command rejections; keep ioredis from printing them.
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return redis;
  } catch (err) {
    redis.disconnect();
    throw redisUnavailable(url, err);
  }
}

/** A connection for BullMQ workers and pub/sub subscribers. */
export function createWorkerRedis(url: string): Redis {
  const redis = new Redis(url, workerOptions());
  redis.on('error', () => undefined);
  return redis;
}
