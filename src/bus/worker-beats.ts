/**
 * Worker heartbeats: each worker process keeps `<prefix>:workers:<id>` alive
 * with a TTL, so status, doctor and the dashboard can tell which workers run
 * (a crashed one disappears within the TTL).
 */
import os from 'node:os';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { CLOSE_TIMEOUT_MS, closedWithin } from './bounded-close.js';
import { opsKeys } from './keys.js';
import { scanKeys } from './redis.js';
import { parseJson } from './turn-records.js';

export const WorkerBeatSchema = z.object({
  id: z.string(),
  pid: z.number(),
  host: z.string(),
  concurrency: z.number(),
  startedAt: z.string(),
});

/** What a worker's heartbeat key holds. */
export type WorkerBeat = z.infer<typeof WorkerBeatSchema>;

export interface WorkerHeartbeatOptions {
  redis: Redis;
  prefix: string;
  /** The worker's id (TurnWorker.id). */
  id: string;
  concurrency: number;
  logger: Logger;
  /** How often the key is refreshed. @defaultValue 5000 */
  intervalMs?: number;
  /** The key's time to live; a silent worker counts as gone after it. @defaultValue 15000 */
  ttlMs?: number;
}

/** Keeps a worker's heartbeat key alive until `close()`, which deletes it. */
export class WorkerHeartbeat {
  private readonly options: Required<WorkerHeartbeatOptions>;
  private readonly beat: WorkerBeat;
  private timer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;

  constructor(options: WorkerHeartbeatOptions) {
    this.options = { intervalMs: 5_000, ttlMs: 15_000, ...options };
    this.beat = {
      id: options.id,
      pid: process.pid,
      host: os.hostname(),
      concurrency: options.concurrency,
      startedAt: new Date().toISOString(),
    };
  }

  /** Writes the key now and then every interval. */
  async start(): Promise<void> {
    await this.write();
    this.timer = setInterval(() => void this.write(), this.options.intervalMs);
    this.timer.unref();
  }

  /**
   * Stops refreshing and deletes the key. Idempotent. With Redis away the key is left to expire
   * by its TTL: the bus's connection waits out a restart, so a DEL sent then would hold the
   * stop until Redis came back (a `magpie start` whose Redis had died never stopped).
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.timer);
      const { redis, prefix, id, logger } = this.options;
      if (redis.status !== 'ready') return;
      const deleting = redis.del(opsKeys.worker(prefix, id)).catch((err) => {
        logger.debug({ err: describeError(err) }, 'worker heartbeat key not deleted');
      });
      if (!(await closedWithin(deleting, CLOSE_TIMEOUT_MS)))
        logger.debug('worker heartbeat key not deleted in time; it expires by its TTL');
    })();
    return this.closing;
  }

  private async write(): Promise<void> {
    const { redis, prefix, id, ttlMs } = this.options;
    try {
      await redis.set(opsKeys.worker(prefix, id), JSON.stringify(this.beat), 'PX', ttlMs);
    } catch (err) {
      this.options.logger.debug({ err: describeError(err) }, 'worker heartbeat not written');
    }
  }
}

/** The live workers (heartbeat keys present), oldest first. */
export async function listWorkers(redis: Redis, prefix: string): Promise<WorkerBeat[]> {
  const keys = await scanKeys(redis, opsKeys.workerPattern(prefix));
  if (keys.length === 0) return [];
  const values = await redis.mget(...keys);
  const out: WorkerBeat[] = [];
  for (const raw of values) {
    const parsed = WorkerBeatSchema.safeParse(parseJson(raw ?? undefined));
    if (parsed.success) out.push(parsed.data);
  }
  return out.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
}
