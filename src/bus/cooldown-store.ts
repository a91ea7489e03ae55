/**
 * The Redis CooldownStore (see src/providers/cooldown.ts): one hash per key,
 * `<prefix>:cooldown:<key>`, with its fields `until`, `failures`, `reason`,
 * `label` and `probe` (a probe under way until then). Each decision is one Lua
 * script on Redis's own clock, so workers on several machines agree and two
 * of them never probe the same endpoint at once. A key expires on its own a
 * quiet `maxMs` after its cool-down, when its failures are forgotten.
 */
import type { Redis } from 'ioredis';
import type { CooldownCheck, CooldownEntry, CooldownFailure, CooldownPolicy } from '../messages/cooldown.js';
import { modelKeys } from './keys.js';
import { scanKeys } from './redis.js';

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** KEYS: the keys to check; ARGV[1]: probe ms. → {'free'} | {'probe'} | {'cooling', key, now, ...HGETALL}. */
const CLAIM = `${NOW}
local over = {}
for _, key in ipairs(KEYS) do
  local v = redis.call('HMGET', key, 'until', 'probe')
  if v[1] then
    if tonumber(v[1]) > now or tonumber(v[2] or '0') > now then
      return {'cooling', key, string.format('%d', now), unpack(redis.call('HGETALL', key))}
    end
    over[#over + 1] = key
  end
end
if #over == 0 then return {'free'} end
for _, key in ipairs(over) do
  redis.call('HSET', key, 'probe', string.format('%d', now + tonumber(ARGV[1])))
end
return {'probe'}`;

/** KEYS: the keys to check. → {} | {key, now, ...HGETALL} of the first one blocking. */
const PEEK = `${NOW}
for _, key in ipairs(KEYS) do
  local v = redis.call('HMGET', key, 'until', 'probe')
  if v[1] and (tonumber(v[1]) > now or tonumber(v[2] or '0') > now) then
    return {key, string.format('%d', now), unpack(redis.call('HGETALL', key))}
  end
end
return {}`;

/**
 * KEYS[1]: the key; ARGV: baseMs, maxMs, retryAfterMs, reason, label, short.
 * → {now, ...HGETALL} after the update (unchanged when already cooling down).
 */
const FAILED = `${NOW}
local key = KEYS[1]
local untilMs = tonumber(redis.call('HGET', key, 'until') or '0')
if untilMs <= now then
  local failures = tonumber(redis.call('HGET', key, 'failures') or '0') + 1
  local base, max, after = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
  local wait = math.min(math.max(base * 2 ^ math.min(failures - 1, 30), after), max)
  redis.call('HSET', key, 'until', string.format('%d', now + wait), 'failures', failures,
    'reason', ARGV[4], 'label', ARGV[5], 'short', ARGV[6])
  redis.call('HDEL', key, 'probe')
  redis.call('PEXPIRE', key, string.format('%d', wait + max))
end
return {string.format('%d', now), unpack(redis.call('HGETALL', key))}`;

/** Cool-downs shared by every worker through Redis. */
/** Implements the `CooldownStore` port of src/providers/cooldown.ts (structurally: the bus imports no higher layer). */
export class RedisCooldownStore {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  async claim(keys: readonly string[], probeMs: number): Promise<CooldownCheck> {
    const reply = (await this.#redis.eval(
      CLAIM,
      keys.length,
      ...keys.map((k) => this.#key(k)),
      String(Math.max(1, Math.round(probeMs))),
    )) as string[];
    if (reply[0] === 'free') return { state: 'free' };
    if (reply[0] === 'probe') return { state: 'probe' };
    return { state: 'cooling', entry: this.#entry(reply[1]!, Number(reply[2]), reply.slice(3)) };
  }

  async peek(keys: readonly string[]): Promise<CooldownEntry | undefined> {
    const reply = (await this.#redis.eval(PEEK, keys.length, ...keys.map((k) => this.#key(k)))) as string[];
    if (reply.length === 0) return undefined;
    return this.#entry(reply[0]!, Number(reply[1]), reply.slice(2));
  }

  async failed(key: string, failure: CooldownFailure, policy: CooldownPolicy): Promise<CooldownEntry> {
    const reply = (await this.#redis.eval(
      FAILED,
      1,
      this.#key(key),
      String(Math.round(policy.baseMs)),
      String(Math.round(policy.maxMs)),
      String(Math.max(0, Math.round(failure.retryAfterMs ?? 0))),
      failure.reason,
      failure.label,
      failure.short ?? '',
    )) as string[];
    return this.#entry(this.#key(key), Number(reply[0]), reply.slice(1));
  }

  async succeeded(keys: readonly string[]): Promise<void> {
    if (keys.length > 0) await this.#redis.del(...keys.map((k) => this.#key(k)));
  }

  async release(keys: readonly string[]): Promise<void> {
    const tx = this.#redis.multi();
    for (const key of keys) tx.hdel(this.#key(key), 'probe');
    await tx.exec();
  }

  async list(): Promise<CooldownEntry[]> {
    const found = await scanKeys(this.#redis, `${this.#key('')}*`);
    if (found.length === 0) return [];
    const [time, ...hashes] = await Promise.all([
      this.#redis.time(),
      ...found.map((key) => this.#redis.hgetall(key)),
    ]);
    const now = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    return found
      .flatMap((key, i) => {
        const fields = hashes[i] as Record<string, string>;
        if (fields.until === undefined) return [];
        return [this.#entry(key, now, Object.entries(fields).flat())];
      })
      .sort((a, b) => b.leftMs - a.leftMs);
  }

  #key(key: string): string {
    return modelKeys.cooldown(this.#prefix, key);
  }

  /** An entry from a Redis key and its HGETALL reply (field, value, field, value …). */
  #entry(redisKey: string, now: number, flat: string[]): CooldownEntry {
    const fields = new Map<string, string>();
    for (let i = 0; i + 1 < flat.length; i += 2) fields.set(flat[i]!, flat[i + 1]!);
    return {
      key: redisKey.slice(this.#key('').length),
      label: fields.get('label') ?? '',
      failures: Number(fields.get('failures') ?? 0),
      reason: fields.get('reason') ?? '',
      short: fields.get('short') ?? '',
      leftMs: Math.max(0, Number(fields.get('until') ?? 0) - now),
    };
  }
}
