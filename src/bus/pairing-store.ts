/**
 * Pairing in Redis: pending requests with their codes and the approved
 * senders of each channel. One Lua script decides and writes a request
 * atomically, so concurrent messages cannot overshoot the cap or mint two
 * codes for one sender (the policy around it is channels/access.ts).
 *
 * Keys (all under `<prefix>:pairing:`):
 * - `code:<CODE>`               the PairingRequest as JSON, expires after the TTL
 * - `pending:<channel>:<id>`    the sender's pending code (same code while pending), expires with it
 * - `notified:<channel>:<id>`   set while the sender was told their code recently, expires after repeatAfterSeconds
 * - `codes`                     sorted set of codes by expiry time (the cap, `list`), expires with the newest code
 * - `approved:<channel>`        set of approved sender ids
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { pairingKeys } from './keys.js';

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

/** The limits a new request is stored under. */
export interface PairingLimits {
  /** How long the code stays valid. */
  ttlSeconds: number;
  /** How long before a pending sender who keeps writing is sent the code again. */
  repeatSeconds: number;
  /** Pending requests kept at most (all channels). */
  maxPending: number;
}

/**
 * What storing a request decided: `send` the code (the new one or the
 * sender's pending one), stay `quiet` (sent recently), `full` (nothing
 * stored), or `taken` (another request holds that code: draw another).
 */
export type PairingDraw =
  | { status: 'send' | 'quiet'; code: string }
  | { status: 'full' }
  | { status: 'taken' };

/** Where pairing requests and approvals are kept (the port channels/access.ts uses). */
export interface PairingStore {
  /** True when `senderId` was approved on `channel`. */
  isApproved(channel: string, senderId: string): Promise<boolean>;
  /** Stores `request` unless its sender has a pending code or the store is full (see {@link PairingDraw}). */
  request(request: PairingRequest, limits: PairingLimits): Promise<PairingDraw>;
}

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

/** Pairing on a shared Redis connection, keys under `<prefix>:pairing:`. */
export class RedisPairingStore implements PairingStore {
  private readonly keys: ReturnType<typeof pairingKeys>;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.keys = pairingKeys(prefix);
  }

  async isApproved(channel: string, senderId: string): Promise<boolean> {
    return (await this.redis.sismember(this.keys.approved(channel), senderId)) === 1;
  }

  async request(request: PairingRequest, limits: PairingLimits): Promise<PairingDraw> {
    const [status, value] = (await this.redis.eval(
      REQUEST_SCRIPT,
      4,
      this.keys.codes,
      this.keys.pending(request.channel, request.senderId),
      this.keys.notified(request.channel, request.senderId),
      this.keys.code(request.code),
      Date.now(),
      limits.ttlSeconds,
      limits.repeatSeconds,
      limits.maxPending,
      request.code,
      JSON.stringify(request),
      this.keys.codePrefix,
    )) as [string, string];
    if (status === 'send' || status === 'quiet') return { status, code: value };
    if (status === 'full') return { status };
    return { status: 'taken' };
  }
}

/** Pending pairing requests of every channel, oldest first. Expired codes are dropped. */
export async function listPairingRequests(redis: Redis, prefix: string): Promise<PairingRequest[]> {
  const k = pairingKeys(prefix);
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
  const k = pairingKeys(prefix);
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
