/**
 * The WhatsApp channel's state in Redis (the `WhatsAppStore` port of
 * channels/whatsapp/store.ts, implemented structurally): the status
 * callbacks Meta sends about each message magpie sent — a hash per message
 * of each status and when it was first reported (expiring after a week), a
 * count per status, and a `failed` one among the delivery failures `magpie
 * status` lists (delivery-failures.ts). One script records a callback, so
 * Meta's redelivery of it changes nothing.
 */
import type { Redis } from 'ioredis';
import { DELIVERY_FAILURES_KEPT, type DeliveryFailure } from './delivery-failures.js';
import { keys } from './keys.js';

/** How long a message's statuses are kept. */
const STATUS_TTL_SECONDS = 7 * 24 * 3600;

/**
 * KEYS: the message's hash, the counts, the failures list. ARGV: status, at (ms), ttl (s),
 * failure JSON (empty unless failed), failures kept. Returns 1 when the status is new.
 */
const RECORD = `
local first = redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
if first == 1 then
  redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
  if ARGV[4] ~= '' then
    redis.call('LPUSH', KEYS[3], ARGV[4])
    redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[5]) - 1)
  end
end
return first
`;

/** One status callback, as the channel read it (the port's record, by shape). */
export interface WhatsAppStatusRecord {
  messageId: string;
  status: string;
  recipient: string;
  /** ms since the epoch. */
  at: number;
  reason?: string;
}

export class RedisWhatsAppStore {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  async recordStatus(record: WhatsAppStatusRecord): Promise<boolean> {
    const failure: DeliveryFailure | undefined =
      record.status === 'failed'
        ? {
            at: record.at,
            channel: 'whatsapp',
            chatId: record.recipient,
            messageId: record.messageId,
            reason: record.reason ?? 'failed',
          }
        : undefined;
    const first = await this.#redis.eval(
      RECORD,
      3,
      keys.whatsappStatus(this.#prefix, record.messageId),
      keys.whatsappStatuses(this.#prefix),
      keys.deliveryFailures(this.#prefix),
      record.status,
      String(record.at),
      String(STATUS_TTL_SECONDS),
      failure ? JSON.stringify(failure) : '',
      String(DELIVERY_FAILURES_KEPT),
    );
    return first === 1;
  }

  async statuses(messageId: string): Promise<Record<string, number>> {
    const all = await this.#redis.hgetall(keys.whatsappStatus(this.#prefix, messageId));
    return Object.fromEntries(Object.entries(all).map(([k, v]) => [k, Number(v)]));
  }

  async counts(): Promise<Record<string, number>> {
    const all = await this.#redis.hgetall(keys.whatsappStatuses(this.#prefix));
    return Object.fromEntries(Object.entries(all).map(([k, v]) => [k, Number(v)]));
  }
}
