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
 */
import type { Redis } from 'ioredis';
import { keys } from './keys.js';

/** How long a claim outlives its turn: far longer than any turn, short enough to leave no litter. */
const CLAIM_TTL_SECONDS = 24 * 60 * 60;

export class TurnFence {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** Makes `attempt` the one that may answer `sessionKey`'s turn (a later claim takes it over). */
  async claim(sessionKey: string, attempt: string): Promise<void> {
    await this.redis.set(keys.turnAttempt(this.prefix, sessionKey), attempt, 'EX', CLAIM_TTL_SECONDS);
  }

  /** True while no later attempt has claimed the turn. */
  async holds(sessionKey: string, attempt: string): Promise<boolean> {
    return (await this.redis.get(keys.turnAttempt(this.prefix, sessionKey))) === attempt;
  }
}
