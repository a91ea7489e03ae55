/**
 * magpie's Lua scripts, sent once per connection and then called by SHA:
 * `runScript` registers a script on the connection with ioredis'
 * `defineCommand` the first time it is used there (ioredis sends EVAL on a
 * socket's first call and EVALSHA after, and falls back to EVAL when Redis
 * answers NOSCRIPT, after a restart or SCRIPT FLUSH). Script bodies are not
 * sent with every call, as `redis.eval` would.
 *
 * {@link HASH_ADD} is a Lua helper for the scripts that add several figures
 * to one hash: one HMGET and one HSET in place of a HINCRBY per field.
 */
import type { ChainableCommander, Redis } from 'ioredis';

/** A Lua script with its number of keys; `name` must be unique among magpie's scripts. */
export interface LuaScript {
  readonly name: string;
  readonly keys: number;
  readonly lua: string;
}

type ScriptCall = (...args: Array<string | number | Buffer>) => Promise<unknown>;

/** The script as a command of `redis`, defined on first use. */
function commandOf(redis: Redis, script: LuaScript): ScriptCall {
  const name = `magpie_${script.name}`;
  const client = redis as unknown as Record<string, ScriptCall | undefined>;
  if (typeof client[name] !== 'function')
    redis.defineCommand(name, { numberOfKeys: script.keys, lua: script.lua });
  return (client[name] as ScriptCall).bind(redis);
}

/**
 * Runs `script` with its keys then its arguments (EVALSHA, EVAL only when the
 * connection has not sent it yet).
 *
 * @example
 *   await runScript(redis, PUSH_ONCE, seenKey, mailboxKey, entry, ttl);
 */
export function runScript(
  redis: Redis,
  script: LuaScript,
  ...args: Array<string | number | Buffer>
): Promise<unknown> {
  return commandOf(redis, script)(...args);
}

/** Queues `script` on a pipeline or MULTI of `redis` (ioredis loads it there first when needed). */
export function queueScript(
  redis: Redis,
  tx: ChainableCommander,
  script: LuaScript,
  ...args: Array<string | number>
): ChainableCommander {
  commandOf(redis, script);
  const queued = tx as unknown as Record<string, (...a: Array<string | number>) => ChainableCommander>;
  return (queued[`magpie_${script.name}`] as (...a: Array<string | number>) => ChainableCommander)(...args);
}

/**
 * Lua: `hashAdd(key, fields, bys)` adds each `bys[i]` to the integer field
 * `fields[i]` of `key` (fields named twice add up) and returns the new values
 * by field, in two commands (HMGET, HSET) whatever the number of fields; zero
 * additions still create their field, as HINCRBY by 0 does. Inside one
 * script this is as atomic as the HINCRBYs it replaces. Values are whole
 * numbers below 2^53 (Lua numbers are doubles); a field holding anything else
 * raises an error, as HINCRBY would.
 */
export const HASH_ADD = `
local function hashAdd(key, fields, bys)
  local sums, order = {}, {}
  for i, field in ipairs(fields) do
    if sums[field] == nil then
      sums[field] = 0
      order[#order + 1] = field
    end
    sums[field] = sums[field] + bys[i]
  end
  if #order == 0 then return sums end
  local current = redis.call('HMGET', key, unpack(order))
  local args = {}
  for i, field in ipairs(order) do
    local now = 0
    if current[i] then
      now = tonumber(current[i])
      if now == nil or now ~= math.floor(now) then error('hash value is not an integer: ' .. field) end
    end
    sums[field] = now + sums[field]
    args[#args + 1] = field
    args[#args + 1] = string.format('%d', sums[field])
  end
  redis.call('HSET', key, unpack(args))
  return sums
end
`;
