/**
 * magpie on a real password-protected three-master Redis Cluster: `magpie doctor`'s
 * redis check names the masters and reads every one of them, a wrong password or
 * no cluster is one clear line without the password, and SCAN sees every master.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { connectProducer, type RedisConnection, scanKeys } from '../../../src/bus/redis.js';
import type { Config } from '../../../src/config/index.js';
import { redisCheckResults } from '../../fakes/doctor.js';
import { type RedisClusterHandle, startRedisCluster } from '../../fakes/redis-cluster.js';
import { freePort } from '../../fakes/redis-server.js';

const PASSWORD = 'cluster-secret-pw';
let cluster: RedisClusterHandle;

beforeAll(async () => {
  cluster = await startRedisCluster({ password: PASSWORD });
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

const configFor = (env: Record<string, string>): Config =>
  parseConfig({ MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`, MAGPIE_WORKSPACE: os.tmpdir(), ...env });

const doctor = redisCheckResults;

describe('Redis Cluster', () => {
  it("doctor: reachable, the cluster's masters named, noeviction and persistence read, no password shown", async () => {
    const results = await doctor(configFor({ REDIS_CLUSTER_NODES: cluster.nodes, REDIS_PASSWORD: PASSWORD }));
    const ports = cluster.servers.map((s) => s.port);
    const masters = ports
      .map((p) => `127.0.0.1:${p}`)
      .sort()
      .join(',');
    expect(results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
    expect(results[0]?.detail).toMatch(
      new RegExp(`^reachable at cluster of 3 masters ${masters}, version \\d+\\.\\d+`),
    );
    expect(results[1]?.detail).toBe('maxmemory-policy noeviction');
    expect(results[2]?.detail).toBe('persistence on (appendonly)');
    expect(JSON.stringify(results)).not.toContain(PASSWORD);
  });

  it('doctor: MAGPIE_REDIS_MIN_REPLICAS on masters without replicas fails, saying every publish is refused', async () => {
    const results = await doctor(
      configFor({
        REDIS_CLUSTER_NODES: cluster.nodes,
        REDIS_PASSWORD: PASSWORD,
        MAGPIE_REDIS_MIN_REPLICAS: '1',
      }),
    );
    expect(results[1]).toMatchObject({
      status: 'fail',
      detail: '0 replica(s) connected, MAGPIE_REDIS_MIN_REPLICAS=1: every publish is refused',
    });
  });

  it('doctor: one master that may evict fails the check, whichever master ioredis asks first', async () => {
    const config = configFor({ REDIS_CLUSTER_NODES: cluster.nodes, REDIS_PASSWORD: PASSWORD });
    const last = cluster.servers.at(-1);
    const redis = await connectProducer(`redis://:${PASSWORD}@127.0.0.1:${last?.port}`);
    try {
      await redis.config('SET', 'maxmemory-policy', 'allkeys-lru');
      const results = await doctor(config);
      expect(results[1]).toMatchObject({
        status: 'fail',
        detail: expect.stringMatching(/^maxmemory-policy is allkeys-lru/),
      });
    } finally {
      await redis.config('SET', 'maxmemory-policy', 'noeviction');
      redis.disconnect();
    }
  });

  it('a wrong password: one line, exit 3, the password not shown', async () => {
    const config = configFor({ REDIS_CLUSTER_NODES: cluster.nodes, REDIS_PASSWORD: 'wrong-pw-x' });
    const refusal = await connectProducer({ kind: 'cluster', ...config.redis.cluster! }).then(
      (r) => {
        r.disconnect();
        throw new Error('connected with a wrong password');
      },
      (err: unknown) => err as Error & { exitCode: number },
    );
    expect(refusal.message).toMatch(
      /^Redis at cluster \(nodes 127\.0\.0\.1:\d+,127\.0\.0\.1:\d+,127\.0\.0\.1:\d+\) is unreachable/,
    );
    expect(refusal.message).not.toContain('\n');
    expect(refusal.message).not.toContain('wrong-pw-x');
    expect(refusal.exitCode).toBe(3);
  });

  it('no cluster at REDIS_CLUSTER_NODES: doctor fails with the fix', async () => {
    const nodes = `127.0.0.1:${await freePort()},127.0.0.1:${await freePort()}`;
    const [result] = await doctor(configFor({ REDIS_CLUSTER_NODES: nodes }));
    expect(result?.status).toBe('fail');
    expect(result?.fix).toBe(
      `start the Cluster's nodes or fix REDIS_CLUSTER_NODES in .env (now cluster (nodes ${nodes}))`,
    );
  });

  it('SCAN reads every master: keys of three slots on three masters are all found', async () => {
    const config = configFor({ REDIS_CLUSTER_NODES: cluster.nodes, REDIS_PASSWORD: PASSWORD });
    const redis: RedisConnection = await connectProducer({ kind: 'cluster', ...config.redis.cluster! });
    const run = randomUUID();
    // Tags whose slots lie on the three masters' ranges (0-5460, 5461-10922, 10923-16383).
    const tags = ['a', 'b', 'c'].map((t) => `{${t}}`);
    try {
      const slots = await Promise.all(tags.map((t) => redis.cluster('KEYSLOT', t) as Promise<number>));
      expect(new Set(slots.map((s) => Math.min(2, Math.floor(s / 5461)))).size).toBe(3);
      await Promise.all(tags.map((t) => redis.set(`${t}:scan-${run}`, '1', 'EX', 60)));
      expect((await scanKeys(redis, `*:scan-${run}`)).sort()).toEqual(
        tags.map((t) => `${t}:scan-${run}`).sort(),
      );
    } finally {
      redis.disconnect();
    }
  });
});
