/**
 * Who may talk to the bot: the `*_ALLOW_FROM` list plus senders approved by
 * pairing. An unknown DM sender gets a short code; the owner runs
 * `magpie pairing approve <code>` and the sender is admitted (kept in Redis).
 *
 * Strangers cannot flood the owner or Redis: a sender keeps the same code
 * while it is pending and is sent it at most once per `repeatAfterSeconds`;
 * at most `maxPending` requests are pending at once (beyond that nothing is
 * stored and nothing is sent); every key expires on its own, and expired
 * codes are pruned on every new request, not only by `pairing list`. One
 * Lua script decides and writes atomically, so concurrent messages cannot
 * overshoot the cap or mint two codes for one sender.
 *
 * Keys (all under `<prefix>:pairing:`):
 * - `code:<CODE>`               the PairingRequest as JSON, expires after the TTL
 * - `pending:<channel>:<id>`    the sender's pending code (same code while pending), expires with it
 * - `notified:<channel>:<id>`   set while the sender was told their code recently, expires after repeatAfterSeconds
 * - `codes`                     sorted set of codes by expiry time (the cap, `list`), expires with the newest code
 * - `approved:<channel>`        set of approved sender ids
 */
import { randomInt } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { AppError } from '../errors/index.js';

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

/** Pending pairing requests kept at most, all channels together (the default of `maxPending`). */
export const DEFAULT_MAX_PENDING = 50;

/** Longest username or display name stored with a request; longer ones are cut. */
const MAX_NAME_LENGTH = 64;

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
  /** How long a pending sender who keeps writing waits before being sent their code again. @defaultValue 600 */
  repeatAfterSeconds?: number;
  /** Pending requests kept at most (all channels); strangers beyond it get nothing. @defaultValue {@link DEFAULT_MAX_PENDING} */
  maxPending?: number;
}

/**
 * What to do about an unknown sender: `send` the code now; stay `quiet` (they
 * were sent this code recently); or nothing at all when the pending requests
 * are `full` (nothing was stored for them).
 */
export type PairingOutcome =
  | { status: 'send'; code: string }
  | { status: 'quiet'; code: string }
  | { status: 'full' };

const keys = (prefix: string) => ({
  code: (code: string) => `${prefix}:pairing:code:${code}`,
  codePrefix: `${prefix}:pairing:code:`,
  pending: (channel: string, senderId: string) => `${prefix}:pairing:pending:${channel}:${senderId}`,
  notified: (channel: string, senderId: string) => `${prefix}:pairing:notified:${channel}:${senderId}`,
  codes: `${prefix}:pairing:codes`,
  approved: (channel: string) => `${prefix}:pairing:approved:${channel}`,
});

/**
 * KEYS: codes, pending, notified, code:<new>. ARGV: now (ms), ttl (s), repeat
 * (s), max pending, new code, request JSON, code key prefix. Returns
 * {status, code}: status `send`, `quiet`, `full` or `taken` (the new code
 * exists: pick another).
 */
const REQUEST_SCRIPT = `
local now = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local existing = redis.call('GET', KEYS[2])
if existing and redis.call('EXISTS', ARGV[7] .. existing) == 1 then
  if redis.call('SET', KEYS[3], '1', 'EX', ARGV[3], 'NX') then return {'send', existing} end
  return {'quiet', existing}
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return {'full', ''} end
if not redis.call('SET', KEYS[4], ARGV[6], 'EX', ttl, 'NX') then return {'taken', ''} end
redis.call('SET', KEYS[2], ARGV[5], 'EX', ttl)
redis.call('ZADD', KEYS[1], now + ttl * 1000, ARGV[5])
redis.call('EXPIRE', KEYS[1], ttl)
redis.call('SET', KEYS[3], '1', 'EX', ARGV[3])
return {'send', ARGV[5]}
`;

/** The access check shared by the Telegram and Discord adapters. */
export class AccessControl {
  private readonly channel: string;
  private readonly allowAll: boolean;
  private readonly allowIds: Set<string>;
  private readonly allowUsernames: Set<string>;
  private readonly redis: Redis;
  private readonly keys: ReturnType<typeof keys>;
  private readonly ttlSeconds: number;
  private readonly repeatSeconds: number;
  private readonly maxPending: number;

  constructor(options: AccessControlOptions) {
    this.ttlSeconds = positive('codeTtlSeconds', options.codeTtlSeconds ?? 3600);
    this.repeatSeconds = positive('repeatAfterSeconds', options.repeatAfterSeconds ?? 600);
    this.maxPending = positive('maxPending', options.maxPending ?? DEFAULT_MAX_PENDING);
    this.channel = options.channel;
    this.redis = options.redis;
    this.keys = keys(options.prefix);
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
   * An unknown sender wrote: their pairing code (a new one, or the same one
   * while it is pending; codes expire after `codeTtlSeconds`) and whether to
   * send it now (at most once per `repeatAfterSeconds`), or `full` when
   * `maxPending` requests are already pending.
   */
  async requestPairing(sender: Sender, chatId: string): Promise<PairingOutcome> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const code = newCode();
      const request: PairingRequest = {
        code,
        channel: this.channel,
        senderId: sender.id,
        chatId,
        createdAt: new Date().toISOString(),
        ...(sender.username ? { username: sender.username.slice(0, MAX_NAME_LENGTH) } : {}),
        ...(sender.displayName ? { displayName: sender.displayName.slice(0, MAX_NAME_LENGTH) } : {}),
      };
      const [status, value] = (await this.redis.eval(
        REQUEST_SCRIPT,
        4,
        this.keys.codes,
        this.keys.pending(this.channel, sender.id),
        this.keys.notified(this.channel, sender.id),
        this.keys.code(code),
        Date.now(),
        this.ttlSeconds,
        this.repeatSeconds,
        this.maxPending,
        code,
        JSON.stringify(request),
        this.keys.codePrefix,
      )) as [string, string];
      if (status === 'send' || status === 'quiet') return { status, code: value };
      if (status === 'full') return { status };
      // 'taken': another pending request drew the same code; draw again
    }
    throw new AppError('INTERNAL', 'no free pairing code after 5 draws');
  }
}

function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer`);
  return value;
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
  const gone: string[] = [];
  values.forEach((value, i) => {
    const request = parseRequest(value);
    if (request) requests.push(request);
    else gone.push(codes[i] as string);
  });
  if (gone.length > 0) await redis.zrem(k.codes, ...gone);
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
