/**
 * A session's mailbox: a Redis list of pending InboundMessages (JSON), in
 * arrival order. A turn reads entries from the head, drains later arrivals
 * while it runs, and removes the entries it took (by value) only after the turn
 * is persisted, so a crashed turn is redone from the same entries. The set
 * `keys.pendingMailboxes` names every session whose mailbox holds entries
 * (added with the entry, removed by the trim that empties it, each in one
 * script), so a sweep can wake the sessions whose turn job was lost without
 * scanning the keyspace.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../log/index.js';
import { type InboundMessage, InboundMessageSchema } from '../messages/messages.js';
import { shortHash } from '../messages/short-hash.js';
import { safeJson } from './json-topic.js';
import { keys } from './keys.js';
import { type LuaScript, runScript } from './lua.js';
import { scanKeys } from './redis.js';

/** How long an inbound message id is remembered against a second delivery (seconds). */
export const SEEN_TTL_S = 24 * 60 * 60;

/**
 * KEYS: seen marker, mailbox, pending set; ARGV: entry, ttl, session. Appends only when the marker
 * was not set. A second delivery still writes (the marker's TTL again): WAIT counts replicas up to
 * its connection's last write, so a WAIT after the redelivery also covers the first delivery's
 * entry, whichever connection wrote it (src/bus/replica-wait.ts).
 */
const PUSH_ONCE: LuaScript = {
  name: 'mailboxPushOnce',
  keys: 3,
  lua: `
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) then
  redis.call('RPUSH', KEYS[2], ARGV[1])
  redis.call('SADD', KEYS[3], ARGV[3])
  return 1
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 0`,
};

/**
 * KEYS: mailbox, pending set; ARGV: session, then the entries to remove. Removes each entry (its
 * first occurrence), whatever its place; an empty mailbox leaves the set.
 */
const TRIM: LuaScript = {
  name: 'mailboxTrim',
  keys: 2,
  lua: `
for i = 2, #ARGV do redis.call('LREM', KEYS[1], 1, ARGV[i]) end
if redis.call('LLEN', KEYS[1]) == 0 then redis.call('SREM', KEYS[2], ARGV[1]) end
return 0`,
};

/**
 * The sessions whose mailbox holds entries (at most `count` a call, in no order).
 * Whether each has a turn job is BullMQ's to say: adding one is deduplicated.
 */
export async function pendingSessions(redis: Redis, prefix: string, count = 1_000): Promise<string[]> {
  return redis.srandmember(keys.pendingMailboxes(prefix), count);
}

/**
 * Once per bus (a marker key): mailboxes that held messages before the set of
 * pending mailboxes existed (an older magpie) are added to it, so the sweep
 * wakes them too. Resolves to the number adopted.
 */
export async function adoptOlderMailboxes(redis: Redis, prefix: string): Promise<number> {
  const first = await redis.set(keys.pendingMailboxesAdopted(prefix), '1', 'NX');
  if (first !== 'OK') return 0;
  const head = keys.mailbox(prefix, '');
  let adopted = 0;
  for (const key of await scanKeys(redis, `${head}*`)) {
    if ((await redis.llen(key)) === 0) continue;
    await redis.sadd(keys.pendingMailboxes(prefix), key.slice(head.length));
    adopted += 1;
  }
  return adopted;
}

/** What a read returned: the valid messages and the entries consumed. */
export interface MailboxRead {
  messages: InboundMessage[];
  /** Entries read, valid or not (malformed ones were moved to the dead list), as stored: what {@link Mailbox.trim} removes. */
  entries: string[];
}

export class Mailbox {
  readonly key: string;
  private readonly deadKey: string;
  private readonly pendingKey: string;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    readonly sessionKey: string,
    private readonly logger: Logger,
  ) {
    this.key = keys.mailbox(prefix, sessionKey);
    this.deadKey = keys.dead(prefix);
    this.pendingKey = keys.pendingMailboxes(prefix);
  }

  /**
   * Appends an (already validated) message unless a message with its id was
   * appended within the last day (`keys.inboundSeen`): a platform that
   * delivers a message again (a platform after a restart before its update was
   * confirmed, a redone scheduled job) does not start a second turn for it —
   * which would share the first turn's outbound ids and lose the answer to
   * whatever joined it. The check and the append are one script. Resolves
   * true when appended.
   */
  async push(message: InboundMessage): Promise<boolean> {
    const seen = keys.inboundSeen(this.prefix, shortHash(message.id, 32));
    const added = await runScript(
      this.redis,
      PUSH_ONCE,
      seen,
      this.key,
      this.pendingKey,
      JSON.stringify(message),
      SEEN_TTL_S,
      this.sessionKey,
    );
    return added === 1;
  }

  /**
   * Reads every entry from index `from` on. Malformed entries are logged and
   * copied to `<prefix>:dead`; they still count as read so the trim removes them.
   */
  async read(from: number): Promise<MailboxRead> {
    const raw = await this.redis.lrange(this.key, from, -1);
    const messages: InboundMessage[] = [];
    for (const entry of raw) {
      const message = parseEntry(entry);
      if (message) {
        messages.push(message);
      } else {
        this.logger.warn(
          { session: this.sessionKey, entry: entry.slice(0, 200) },
          'malformed mailbox entry moved aside',
        );
        await this.redis.rpush(
          this.deadKey,
          JSON.stringify({ session: this.sessionKey, entry, at: new Date().toISOString() }),
        );
      }
    }
    return { messages, entries: raw };
  }

  /**
   * Removes the `entries` a turn read (as {@link read} returned them), by value, not by count:
   * when two workers ran the session's turn at once (a lock lost while Redis failed over), the
   * other's trim may have removed them already, and a count would then remove entries that
   * arrived later, which no turn answered. Entries not named stay. A mailbox left empty (none
   * named too) leaves the set of pending mailboxes.
   */
  async trim(entries: readonly string[]): Promise<void> {
    await runScript(this.redis, TRIM, this.key, this.pendingKey, this.sessionKey, ...entries);
  }

  /** Number of pending entries. */
  async length(): Promise<number> {
    return this.redis.llen(this.key);
  }
}

function parseEntry(entry: string): InboundMessage | undefined {
  const result = InboundMessageSchema.safeParse(safeJson(entry));
  return result.success ? result.data : undefined;
}
