/**
 * Who may talk to the bot: the `*_ALLOW_FROM` list plus senders approved by
 * pairing. An unknown DM sender gets a short code; the owner runs
 * `magpie pairing approve <code>` and the sender is admitted (kept in Redis).
 *
 * Keys (all under `<prefix>:pairing:`):
 * - `code:<CODE>`               the PairingRequest as JSON, expires after the TTL
 * - `pending:<channel>:<id>`    the sender's pending code (same code while pending)
 * - `codes`                     sorted set of codes by expiry time (for `list`)
 * - `approved:<channel>`        set of approved sender ids
 */
import { randomInt } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';

/** The person behind a platform message. */
export interface Sender {
  id: string;
  username?: string;
  displayName?: string;
}

/** A pending request to be admitted, as shown by `magpie pairing list`. */
export interface PairingRequest {
  code: string;
  channel: string;
  senderId: string;
  username?: string;
  displayName?: string;
  chatId: string;
  createdAt: string;
}

const PairingRequestSchema = z.object({
  code: z.string(),
  channel: z.string(),
  senderId: z.string(),
  username: z.string().optional(),
  displayName: z.string().optional(),
  chatId: z.string(),
  createdAt: z.string(),
});

/** Characters of a pairing code: no 0/O, 1/I confusion. */
const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const CODE_LENGTH = 6;

export interface AccessControlOptions {
  /** Channel name (`telegram`, `discord`): approvals are per channel. */
  channel: string;
  /** Entries of `*_ALLOW_FROM`: `*`, sender ids, or `@usernames` (case-insensitive). */
  allowFrom: string[];
  redis: Redis;
  /** Key prefix (config.redis.prefix). */
  prefix: string;
  /** How long a pairing code stays valid. @defaultValue 3600 */
  codeTtlSeconds?: number;
}

const keys = (prefix: string) => ({
  code: (code: string) => `${prefix}:pairing:code:${code}`,
  pending: (channel: string, senderId: string) => `${prefix}:pairing:pending:${channel}:${senderId}`,
  codes: `${prefix}:pairing:codes`,
  approved: (channel: string) => `${prefix}:pairing:approved:${channel}`,
});

/** The access check shared by the Telegram and Discord adapters. */
export class AccessControl {
  private readonly channel: string;
  private readonly allowAll: boolean;
  private readonly allowIds: Set<string>;
  private readonly allowUsernames: Set<string>;
  private readonly redis: Redis;
  private readonly keys: ReturnType<typeof keys>;
  private readonly ttlSeconds: number;

  constructor(options: AccessControlOptions) {
    const ttl = options.codeTtlSeconds ?? 3600;
    if (!Number.isInteger(ttl) || ttl < 1) throw new RangeError(`codeTtlSeconds must be a positive integer`);
    this.channel = options.channel;
    this.redis = options.redis;
    this.keys = keys(options.prefix);
    this.ttlSeconds = ttl;
    const entries = options.allowFrom.map((e) => e.trim()).filter((e) => e !== '');
    this.allowAll = entries.includes('*');
    this.allowIds = new Set(entries.filter((e) => !e.startsWith('@')));
    this.allowUsernames = new Set(
      entries.filter((e) => e.startsWith('@')).map((e) => e.slice(1).toLowerCase()),
    );
  }

  /** True when the allow-list names the sender (or `*`), or the sender was approved by pairing. */
  async isAllowed(sender: Sender): Promise<boolean> {
    if (this.allowAll || this.allowIds.has(sender.id)) return true;
    if (sender.username && this.allowUsernames.has(sender.username.replace(/^@/, '').toLowerCase())) {
      return true;
    }
    return (await this.redis.sismember(this.keys.approved(this.channel), sender.id)) === 1;
  }

  /**
   * The sender's pairing code: a new one, or the same one while it is pending.
   * Codes expire after `codeTtlSeconds`.
   */
  async requestPairing(sender: Sender, chatId: string): Promise<string> {
    const pendingKey = this.keys.pending(this.channel, sender.id);
    const existing = await this.redis.get(pendingKey);
    if (existing && (await this.redis.exists(this.keys.code(existing))) === 1) return existing;

    const code = newCode();
    const request: PairingRequest = {
      code,
      channel: this.channel,
      senderId: sender.id,
      chatId,
      createdAt: new Date().toISOString(),
      ...(sender.username ? { username: sender.username } : {}),
      ...(sender.displayName ? { displayName: sender.displayName } : {}),
    };
    const expiresAt = Date.now() + this.ttlSeconds * 1000;
    await this.redis
      .multi()
      .set(this.keys.code(code), JSON.stringify(request), 'EX', this.ttlSeconds)
      .set(pendingKey, code, 'EX', this.ttlSeconds)
      .zadd(this.keys.codes, expiresAt, code)
      .exec();
    return code;
  }
}

function newCode(): string {
  let code = '';
  for (let i = 0; i < CODE_LENGTH; i++) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return code;
}

/** Pending pairing requests of every channel, oldest first. Expired codes are dropped. */
export async function listPairingRequests(redis: Redis, prefix: string): Promise<PairingRequest[]> {
  const k = keys(prefix);
  await redis.zremrangebyscore(k.codes, '-inf', String(Date.now()));
  const codes = await redis.zrange(k.codes, '0', '-1');
  if (codes.length === 0) return [];
  const values = await redis.mget(codes.map((c) => k.code(c)));
  const requests: PairingRequest[] = [];
  for (const value of values) {
    const request = parseRequest(value);
    if (request) requests.push(request);
  }
  return requests.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/**
 * Admits the sender behind `code` (case-insensitive) on its channel. Returns
 * the request, or undefined when no pending request has that code.
 */
export async function approvePairing(
  redis: Redis,
  prefix: string,
  code: string,
): Promise<PairingRequest | undefined> {
  const k = keys(prefix);
  const normalized = code.trim().toUpperCase();
  const request = parseRequest(await redis.get(k.code(normalized)));
  if (!request) return undefined;
  await redis
    .multi()
    .sadd(k.approved(request.channel), request.senderId)
    .del(k.code(normalized), k.pending(request.channel, request.senderId))
    .zrem(k.codes, normalized)
    .exec();
  return request;
}

function parseRequest(value: string | null): PairingRequest | undefined {
  if (value === null) return undefined;
  try {
    const parsed = PairingRequestSchema.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : undefined;
  } catch (err) {
    if (err instanceof SyntaxError) return undefined;
    throw err;
  }
}
