/**
 * A session's mailbox: a Redis list of pending InboundMessages (JSON), in
 * arrival order. A turn reads entries from the head, drains later arrivals
 * while it runs, and trims what it took only after the turn is persisted, so a
 * crashed turn is redone from the same entries.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../log/index.js';
import { keys } from './keys.js';
import { type InboundMessage, InboundMessageSchema } from './messages.js';

/** What a read returned: the valid messages and how many entries were consumed. */
export interface MailboxRead {
  messages: InboundMessage[];
  /** Entries read, valid or not (malformed ones were moved to the dead list). */
  count: number;
}

export class Mailbox {
  readonly key: string;
  private readonly deadKey: string;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    readonly sessionKey: string,
    private readonly logger: Logger,
  ) {
    this.key = keys.mailbox(prefix, sessionKey);
    this.deadKey = keys.dead(prefix);
  }

  /** Appends an (already validated) message. */
  async push(message: InboundMessage): Promise<void> {
    await this.redis.rpush(this.key, JSON.stringify(message));
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
    return { messages, count: raw.length };
  }

  /** Removes the first `count` entries; entries that arrived after them stay. */
  async trim(count: number): Promise<void> {
    if (count > 0) await this.redis.ltrim(this.key, count, -1);
  }

  /** Number of pending entries. */
  async length(): Promise<number> {
    return this.redis.llen(this.key);
  }
}

function parseEntry(entry: string): InboundMessage | undefined {
  let value: unknown;
  try {
    value = JSON.parse(entry);
  } catch {
    return undefined;
  }
  const result = InboundMessageSchema.safeParse(value);
  return result.success ? result.data : undefined;
}
