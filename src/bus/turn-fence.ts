/**
 * Which attempt of a session's turn may answer it. BullMQ's lock keeps one
 * worker on a turn job, but a lock lost (Redis away longer than the lock, an
 * event loop stalled past a renewal) lets another worker take the job while
 * the first still runs. Both would name their reply after the same first
 * message; the first one queued wins the id, and a message only the other
 * attempt read would get no answer.
 *
 * So each attempt writes its own id under `<prefix>:attempt:<session>` when it
 * starts, before it reads the session, and answers (publishes, then trims the
 * mailbox) only while its id is still there. An attempt that finds a later
 * one's id leaves everything to it. The later attempt read the session after
 * it claimed, so when the earlier one's check passed first, the later one sees
 * the earlier one's stored answer and sends it again under its id (a no-op)
 * instead of answering those messages anew.
 *
 * A claim can also vanish without a later attempt taking it: a failover to a
 * replica that had not copied it yet, a Redis restarted without its data. The
 * check then takes the claim again, in the same script, unless another attempt
 * did so first; so the attempt goes on answering instead of stopping and
 * leaving its messages to the stranded-mailbox sweep (tens of seconds later).
 * Two attempts that both lost their claim cannot both take it back: the first
 * check to run sets it, and the other's then finds that attempt's id.
 */
import type { Redis } from 'ioredis';
import { keys } from './keys.js';
import { type LuaScript, runScript } from './lua.js';

/** How long a claim outlives its turn: far longer than any turn, short enough to leave no litter. */
const CLAIM_TTL_SECONDS = 24 * 60 * 60;

/** 1: `ARGV[1]` holds the claim; 2: nobody did, and it holds it now; 0: another attempt does. */
const HOLDS_SCRIPT: LuaScript = {
  name: 'turnFenceHolds',
  keys: 1,
  lua: `local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then return 1 end
if v then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 2`,
};

/** What a check of the claim found. */
export type Hold = 'held' | 'retaken' | 'taken';

export class TurnFence {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** Makes `attempt` the one that may answer `sessionKey`'s turn (a later claim takes it over). */
  async claim(sessionKey: string, attempt: string): Promise<void> {
    await this.redis.set(keys.turnAttempt(this.prefix, sessionKey), attempt, 'EX', CLAIM_TTL_SECONDS);
  }

  /** True while no later attempt has claimed the turn; a claim found missing is taken again. */
  async holds(sessionKey: string, attempt: string): Promise<boolean> {
    return (await this.check(sessionKey, attempt)) !== 'taken';
  }

  /** Checks the claim of `attempt`, taking it again when it is gone (see above). */
  async check(sessionKey: string, attempt: string): Promise<Hold> {
    const found = await runScript(
      this.redis,
      HOLDS_SCRIPT,
      keys.turnAttempt(this.prefix, sessionKey),
      attempt,
      CLAIM_TTL_SECONDS,
    );
    return found === 1 ? 'held' : found === 2 ? 'retaken' : 'taken';
  }
}
