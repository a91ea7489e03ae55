/**
 * The bus's connection is auto-pipelined (src/bus/redis.ts `autoPipelined`): the commands of
 * one turn of the event loop leave in one write, and a Lua script or a BullMQ queue defined
 * while such a pipeline waits can still be called in it. On a real Redis of this file's own.
 */
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LuaScript, runScript } from '../../../src/bus/lua.js';
import { connectProducer } from '../../../src/bus/redis.js';
import { type RedisHandle, startRedis } from '../../fakes/redis-server.js';

let server: RedisHandle;
const open: Redis[] = [];

beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  for (const redis of open) redis.disconnect();
  await server?.stop();
});

async function connect(patient: boolean): Promise<Redis> {
  const redis = await connectProducer(server.url, patient);
  open.push(redis);
  return redis;
}

/** Counts the writes to the connection's socket from now on. */
function countWrites(redis: Redis): () => number {
  const stream = (redis as unknown as { stream: Socket }).stream;
  const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
  let writes = 0;
  (stream as unknown as { write: (...args: unknown[]) => boolean }).write = (...args) => {
    writes += 1;
    return write(...args);
  };
  return () => writes;
}

describe('the bus connection', () => {
  it.each([
    ['a gateway (fails fast)', false],
    ['a worker (waits for Redis)', true],
  ])('sends the commands of one tick in one write: %s', async (_role, patient) => {
    const redis = await connect(patient);
    const key = `ap-${randomUUID()}`;
    const writes = countWrites(redis);
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => redis.hincrby(key, 'n', i)));
    expect(writes()).toBe(1);
    expect(replies.at(-1)).toBe(190);
  });

  it('runs a script defined while an automatic pipeline waits, in that pipeline', async () => {
    const redis = await connect(true);
    const script: LuaScript = {
      name: `apDefinedLate${randomUUID().replaceAll('-', '')}`,
      keys: 1,
      lua: "return redis.call('INCRBY', KEYS[1], ARGV[1])",
    };
    const key = `ap-${randomUUID()}`;
    const writes = countWrites(redis);
    // The SET opens a pipeline; the script is defined (first use) while it waits to be sent.
    const [set, sum] = await Promise.all([redis.set(key, '40'), runScript(redis, script, key, 2)]);
    expect([set, sum]).toEqual(['OK', 42]);
    expect(writes()).toBe(1);
  });

  it('keeps the order of the commands one flow issues without waiting', async () => {
    const redis = await connect(true);
    const key = `ap-${randomUUID()}`;
    const [, , appended, read] = await Promise.all([
      redis.rpush(key, 'a'),
      redis.rpush(key, 'b'),
      redis.rpush(key, 'c'),
      redis.lrange(key, 0, -1),
    ]);
    expect(appended).toBe(3);
    expect(read).toEqual(['a', 'b', 'c']);
  });

  it('sends callBuffer with its command in an automatic pipeline (EVAL as the backup sends it, and a command ioredis does not know)', async () => {
    const redis = await connect(true);
    const key = `ap-${randomUUID()}`;
    const [, reply] = await Promise.all([
      redis.set(key, 'stored'),
      redis.callBuffer('EVAL', ["return redis.call('GET', KEYS[1])", 1, key]),
    ]);
    expect(Buffer.isBuffer(reply)).toBe(true);
    expect(String(reply)).toBe('stored');
    // Redis names the command it got: the name, not the first argument.
    await expect(redis.callBuffer('MAGPIE.NOSUCH', 'first-argument')).rejects.toThrow(
      /unknown command 'MAGPIE\.NOSUCH'/i,
    );
  });

  it("adds a job through a BullMQ queue made while the connection's commands wait", async () => {
    const redis = await connect(true);
    const prefix = `ap-${randomUUID()}`;
    const pending = redis.set(`${prefix}:mark`, '1');
    const queue = new Queue('turns', { connection: redis, prefix });
    try {
      const job = await queue.add('turn', { n: 1 }, { jobId: 'one' });
      await pending;
      expect(job.id).toBe('one');
      expect(await queue.getJobCounts('wait')).toEqual({ wait: 1 });
    } finally {
      await queue.close();
    }
  });
});
