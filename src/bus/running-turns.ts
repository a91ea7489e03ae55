/**
 * The one record of a running turn: `<prefix>:running:<session>` holds the
 * turn's JSON (turn id, since, LLM iteration, worker) with a TTL that each
 * update renews, so a crashed worker's record goes away on its own. `/stop`
 * asks it whether anything is running, the heartbeat waits while a chat is
 * busy, and status and /metrics list it.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { keys } from './keys.js';
import { scanKeys } from './redis.js';

/** How long a running-turn record survives its worker without an update. */
export const RUNNING_TTL_SECONDS = 15 * 60;

export const RunningTurnSchema = z.object({
  /** The worker's turn id (session + first message). */
  turn: z.string(),
  session: z.string(),
  /** ISO time the turn started. */
  since: z.string(),
  /** The LLM iteration running (0 before the first call). */
  iteration: z.number(),
  worker: z.string(),
});

/** A turn running now. */
export type RunningTurn = z.infer<typeof RunningTurnSchema>;

/** Running-turn records on a shared connection. */
export class RedisRunningTurns {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** Writes (or updates) the record of `entry.session`'s turn and renews its TTL. */
  async mark(entry: RunningTurn): Promise<void> {
    await this.redis.set(
      keys.running(this.prefix, entry.session),
      JSON.stringify(entry),
      'EX',
      RUNNING_TTL_SECONDS,
    );
  }

  /** Removes the record of a session's turn. */
  async clear(sessionKey: string): Promise<void> {
    await this.redis.del(keys.running(this.prefix, sessionKey));
  }

  /** True while a turn of the session is running. */
  async isRunning(sessionKey: string): Promise<boolean> {
    return (await this.redis.exists(keys.running(this.prefix, sessionKey))) > 0;
  }

  /** Every running turn, oldest first (malformed records skipped). */
  async list(): Promise<RunningTurn[]> {
    const found = new Set(await scanKeys(this.redis, keys.running(this.prefix, '*')));
    if (found.size === 0) return [];
    const values = await this.redis.mget([...found]);
    const out: RunningTurn[] = [];
    for (const raw of values) {
      const parsed = RunningTurnSchema.safeParse(parseJson(raw));
      if (parsed.success) out.push(parsed.data);
    }
    return out.sort((a, b) => a.since.localeCompare(b.since));
  }
}

function parseJson(raw: string | null): unknown {
  if (raw === null) return undefined;
  try {
    return JSON.parse(raw);
  } catch (_err) {
    return undefined; // not JSON: the schema check that follows rejects it
  }
}
