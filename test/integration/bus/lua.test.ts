/**
 * magpie's Lua scripts on a real Redis: called by SHA after the first call of a connection, sent
 * again when Redis forgot them (SCRIPT FLUSH, as after a restart), and HASH_ADD adding figures as
 * the HINCRBYs it replaces did.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HASH_ADD, type LuaScript, runScript } from '../../../src/bus/lua.js';
import { type RedisHandle, startRedis } from '../../fakes/redis-server.js';
import { waitFor } from '../../fakes/wait-for.js';

const ADD: LuaScript = {
  name: 'testHashAdd',
  keys: 1,
  lua: `${HASH_ADD}
local fields, bys = {}, {}
for i = 1, #ARGV, 2 do
  fields[#fields + 1] = ARGV[i]
  bys[#bys + 1] = tonumber(ARGV[i + 1])
end
local sums = hashAdd(KEYS[1], fields, bys)
local out = {}
for _, field in ipairs(fields) do out[#out + 1] = tostring(sums[field]) end
return out`,
};

// A Redis of its own: MONITOR on the suite's shared one raced other files' traffic while ioredis
// switched the connection into monitor mode ("Command queue state error").
let server: RedisHandle;
let redis: Redis;
let monitor: Redis;
const seen: string[] = [];

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
  // Only this file's connection (its address) is counted, not the monitor's own.
  const info = String(await redis.client('INFO'));
  const address = /(?:^|\s)addr=(\S+)/.exec(info)?.[1];
  if (!address) throw new Error(`no addr= in CLIENT INFO: ${info}`);
  monitor = await new Redis(server.url).monitor();
  monitor.on('monitor', (_t: string, args: string[], source: string) => {
    if (source === address) seen.push(args[0]!.toLowerCase());
  });
});
afterAll(async () => {
  monitor?.disconnect();
  redis?.disconnect();
  await server?.stop();
});

/** The commands MONITOR saw while `run` ran (a PING after it marks the end). */
async function commandsOf(run: () => Promise<unknown>): Promise<string[]> {
  const mark = `mark-${randomUUID()}`;
  await redis.echo(mark);
  const from = seen.length;
  await run();
  await redis.ping();
  await waitFor(() => seen.slice(from).includes('ping'), 10_000, 'MONITOR to catch up');
  return seen.slice(from, seen.lastIndexOf('ping'));
}

describe('runScript', () => {
  it('sends the body once per connection, then calls by SHA', async () => {
    const key = `lua-${randomUUID()}`;
    const first = await commandsOf(() => runScript(redis, ADD, key, 'a', 1));
    const second = await commandsOf(() => runScript(redis, ADD, key, 'a', 1));
    expect(first.filter((c) => c === 'eval' || c === 'evalsha')).toEqual(['eval']);
    expect(second.filter((c) => c === 'eval' || c === 'evalsha')).toEqual(['evalsha']);
  });

  it('sends the body again when Redis forgot the script, and the call still succeeds once', async () => {
    const key = `lua-${randomUUID()}`;
    await runScript(redis, ADD, key, 'n', 1);
    await redis.script('FLUSH');
    const commands = await commandsOf(() => runScript(redis, ADD, key, 'n', 1));
    expect(commands.filter((c) => c === 'eval' || c === 'evalsha')).toEqual(['evalsha', 'eval']);
    expect(await redis.hget(key, 'n')).toBe('2');
  });
});

describe('HASH_ADD', () => {
  it('adds like HINCRBY: new fields, repeated fields, negatives and zeros (which create their field)', async () => {
    const viaScript = `lua-${randomUUID()}`;
    const viaHincrby = `lua-${randomUUID()}`;
    const adds: Array<[string, number]> = [
      ['a', 5],
      ['b', 0],
      ['a', -2],
      ['c', 1_000_000_000_000],
    ];
    await redis.hset(viaScript, 'a', '10');
    await redis.hset(viaHincrby, 'a', '10');
    const sums = await runScript(redis, ADD, viaScript, ...adds.flat());
    for (const [field, by] of adds) await redis.hincrby(viaHincrby, field, by);
    expect(await redis.hgetall(viaScript)).toEqual(await redis.hgetall(viaHincrby));
    expect(sums).toEqual(['13', '0', '13', '1000000000000']);
  });

  it('refuses a field that holds no whole number, as HINCRBY does, and writes nothing to that hash', async () => {
    const key = `lua-${randomUUID()}`;
    await redis.hset(key, 'a', 'text', 'b', '1');
    await expect(runScript(redis, ADD, key, 'b', 1, 'a', 1)).rejects.toThrow(/not an integer: a/);
    expect(await redis.hgetall(key)).toEqual({ a: 'text', b: '1' });
  });
});
