/**
 * The Redis side of `magpie backup` / `magpie restore`: every key under the
 * prefix that matters, taken from one point in time, and put back in one call.
 *
 * One Lua script SCANs the prefix and DUMPs each key with its PTTL: a script
 * runs atomically, so the turns that keep running while a backup is taken
 * cannot change a key between two reads (a MULTI of DUMPs after a SCAN would
 * miss keys made between the two). DUMP/RESTORE copies every type exactly
 * (streams, sorted sets, BullMQ's hashes) without magpie knowing their shape.
 * The script is called with one declared key under the prefix, so in a
 * Cluster it runs on the node that holds the prefix's hash tag slot, where all
 * of magpie's keys live. Keys are kept relative to the prefix, so an archive
 * restores under another prefix (a one-server set-up moving to a Cluster).
 *
 * What is skipped (live, rebuilt or only meaningful to a running process) is
 * {@link SKIPPED_KEYS}; docs/DEPLOYMENT.md lists every key family and why.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { AppError, ExitCode } from '../errors/index.js';
import { safeJson } from './json-topic.js';

/**
 * Key families left out of a backup, as Lua patterns matched against the key
 * after `<prefix>:`. BullMQ's finished (completed) jobs are left out by the
 * script itself, with their logs.
 */
export const SKIPPED_KEYS: readonly string[] = Object.freeze([
  '^running:', // a turn running now: its job is redone after a restore
  '^attempt:', // which attempt of a running turn may answer
  '^cron%-add:', // a lock held while a task is added
  '^live%-record:', // what a channel showed of a live reply
  '^cli:', // a waiting `magpie send`'s replies: the client is gone
  '^cli%-replies:',
  '^cooldown:', // a model resting after failures: a cache
  '^workers:', // live worker heartbeats
  '^scheduler:heartbeat%-lock$',
  '^budget:rate:', // one minute's call counter
  '^backup:', // the record of the last backup belongs to the machine that made it
  ':events$', // BullMQ's event streams (for live listeners)
  ':lock$', // BullMQ's job locks: a job running now is redone after a restore
  ':stalled%-check$',
]);

/** One key of a snapshot: its name after `<prefix>:`, its PTTL (-1: none) and its DUMP payload. */
export interface RedisEntry {
  key: string;
  pttlMs: number;
  payload: Buffer;
}

const SNAPSHOT_LUA = `
local prefix = ARGV[1]
local head = prefix .. ':'
local all, cursor = {}, '0'
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', head .. '*', 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do all[#all + 1] = key end
until cursor == '0'
local skip = {}
for _, key in ipairs(all) do
  if string.sub(key, -10) == ':completed' and redis.call('TYPE', key).ok == 'zset' then
    skip[key] = true
    local queue = string.sub(key, 1, -10)
    for _, id in ipairs(redis.call('ZRANGE', key, 0, -1)) do
      skip[queue .. id] = true
      skip[queue .. id .. ':logs'] = true
    end
  end
end
local out = {}
for _, key in ipairs(all) do
  local rest = string.sub(key, #head + 1)
  local keep = not skip[key]
  for i = 2, #ARGV do
    if keep and string.find(rest, ARGV[i]) then keep = false end
  end
  if keep then
    local payload = redis.call('DUMP', key)
    if payload then
      out[#out + 1] = rest
      out[#out + 1] = tostring(redis.call('PTTL', key))
      out[#out + 1] = payload
    end
  end
end
return out
`;

const COUNT_LUA = `
local n, cursor = 0, '0'
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ARGV[1] .. ':*', 'COUNT', 1000)
  cursor = page[1]
  n = n + #page[2]
until cursor == '0'
return n
`;

const CLEAR_LUA = `
local n, cursor = 0, '0'
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ARGV[1] .. ':*', 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    redis.call('UNLINK', key)
    n = n + 1
  end
until cursor == '0'
return n
`;

const RESTORE_LUA = `
local head = ARGV[1] .. ':'
local replace = ARGV[2] == '1'
local existing, cursor = {}, '0'
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', head .. '*', 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do existing[#existing + 1] = key end
until cursor == '0'
if #existing > 0 and not replace then
  return redis.error_reply('NOTEMPTY ' .. #existing)
end
local staging = head .. 'backup:staging:'
local staged = {}
for i = 3, #ARGV, 3 do
  local ttl = tonumber(ARGV[i + 1])
  if ttl < 0 then ttl = 0 end
  local name = staging .. ARGV[i]
  redis.call('UNLINK', name)
  local ok = redis.pcall('RESTORE', name, ttl, ARGV[i + 2])
  if type(ok) == 'table' and ok.err then
    for _, done in ipairs(staged) do redis.call('UNLINK', done) end
    return redis.error_reply('BADPAYLOAD ' .. ARGV[i] .. ': ' .. ok.err)
  end
  staged[#staged + 1] = name
end
for _, key in ipairs(existing) do redis.call('UNLINK', key) end
local restored = 0
for i = 3, #ARGV, 3 do
  redis.call('RENAME', staging .. ARGV[i], head .. ARGV[i])
  restored = restored + 1
end
return {restored, #existing}
`;

/** The record of the last backup (`magpie status`, the dashboard). */
export const LastBackupSchema = z.object({
  file: z.string(),
  /** When it finished (ISO). */
  at: z.string(),
  bytes: z.number().int().nonnegative(),
});
export type LastBackup = z.infer<typeof LastBackupSchema>;

/** What a restore did. */
export interface RestoreOutcome {
  restored: number;
  /** Keys that were under the prefix before and were removed (`--force`). */
  replaced: number;
}

/** Reads and writes the prefix's keys for backups. */
export class RedisBackupStore {
  constructor(
    private readonly redis: Redis,
    readonly prefix: string,
  ) {}

  /** Every key that matters under the prefix, from one moment (one script). */
  async snapshot(): Promise<RedisEntry[]> {
    // EVAL rather than a cached script: binary replies, and a backup is rare.
    const reply = (await this.redis.callBuffer('EVAL', [
      SNAPSHOT_LUA,
      1,
      this.#routeKey(),
      this.prefix,
      ...SKIPPED_KEYS,
    ])) as Buffer[];
    const entries: RedisEntry[] = [];
    for (let i = 0; i + 2 < reply.length; i += 3) {
      entries.push({
        key: (reply[i] as Buffer).toString('utf8'),
        pttlMs: Number((reply[i + 1] as Buffer).toString('utf8')),
        payload: reply[i + 2] as Buffer,
      });
    }
    return entries;
  }

  /** How many keys are under the prefix now (0: an empty target); a script, so a Cluster counts on the prefix's node. */
  async count(): Promise<number> {
    return Number(await this.redis.call('EVAL', COUNT_LUA, 1, this.#routeKey(), this.prefix));
  }

  /**
   * Removes every key under the prefix, in one script; resolves with how many.
   * Only for undoing a restore into a prefix that was empty (another agent's
   * prefix was refused after this one was filled).
   */
  async clear(): Promise<number> {
    return Number(await this.redis.call('EVAL', CLEAR_LUA, 1, this.#routeKey(), this.prefix));
  }

  /**
   * Puts `entries` back under the prefix in one script: refused when the prefix
   * holds keys unless `replace`, which removes them. Every key is first
   * restored under a staging name (`<prefix>:backup:staging:…`) and only
   * renamed into place once all were accepted, so a payload this Redis cannot
   * read (one DUMPed by a newer Redis) leaves the prefix as it was.
   */
  async restore(entries: readonly RedisEntry[], replace: boolean): Promise<RestoreOutcome> {
    const args: Array<string | Buffer> = [this.prefix, replace ? '1' : '0'];
    for (const e of entries) args.push(e.key, String(e.pttlMs), e.payload);
    let reply: unknown;
    try {
      reply = await this.redis.callBuffer('EVAL', [RESTORE_LUA, 1, this.#routeKey(), ...args]);
    } catch (err) {
      const message = (err as Error).message;
      const notEmpty = /NOTEMPTY (\d+)/.exec(message);
      if (notEmpty)
        throw new AppError(
          'INVALID_MESSAGE',
          `Redis already holds ${notEmpty[1]} keys under the prefix "${this.prefix}": restore into an empty prefix, or add --force to replace them`,
          { exitCode: ExitCode.config },
        );
      throw new AppError('INTERNAL', `Redis refused the restore, nothing was changed: ${message}`, {
        cause: err,
      });
    }
    const [restored, replaced] = reply as [number, number];
    return { restored, replaced };
  }

  /** Records the last backup made. */
  async recordLast(last: LastBackup): Promise<void> {
    await this.redis.set(this.#lastKey(), JSON.stringify(last));
  }

  /** The last backup made, if one was recorded. */
  async last(): Promise<LastBackup | undefined> {
    const raw = await this.redis.get(this.#lastKey());
    if (raw === null) return undefined;
    const parsed = LastBackupSchema.safeParse(safeJson(raw));
    return parsed.success ? parsed.data : undefined;
  }

  /** A key under the prefix: routes the scripts to the prefix's node in a Cluster. */
  #routeKey(): string {
    return `${this.prefix}:backup:route`;
  }

  #lastKey(): string {
    return `${this.prefix}:backup:last`;
  }
}
