/**
 * Backups on a Redis Cluster: an archive from one redis-server restores into
 * a three-master Cluster under the hash-tagged prefix (`{prefix}`, one slot,
 * so the scripts run on one node), and a backup taken there holds the same
 * keys.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { createBackup } from '../../../src/backup/backup.js';
import { restoreBackup } from '../../../src/backup/restore.js';
import { RedisBackupStore } from '../../../src/bus/backup-store.js';
import { Bus } from '../../../src/bus/bus.js';
import { silentLogger } from '../../../src/log/index.js';
import { type RedisClusterHandle, startRedisCluster } from '../../fakes/redis-cluster.js';

let cluster: RedisClusterHandle;
let root: string;

beforeAll(async () => {
  cluster = await startRedisCluster();
  root = await mkdtemp(path.join(os.tmpdir(), 'magpie-cluster-backup-'));
}, 60_000);
afterAll(async () => {
  await cluster.stop();
  await rm(root, { recursive: true, force: true });
});

describe('backup and restore on a Redis Cluster', () => {
  it('restores a one-server archive under the hash-tagged prefix and backs it up again', async () => {
    const name = `test-${randomUUID()}`;
    const source = new Redis(inject('redisUrl'));
    await source.hset(`${name}:chat-models`, 'cli:ana', 'big-model');
    await source.rpush(`${name}:mailbox:cli:ana`, 'hello?');
    await source.set(`${name}:pairing:code:ABCD`, '{}', 'PX', 600_000);
    const ws = path.join(root, 'ws');
    await mkdir(ws);
    await writeFile(path.join(ws, 'SOUL.md'), 'kind');
    const out = path.join(root, 'one.tar.gz');
    try {
      await createBackup({
        workspace: ws,
        stateDir: path.join(root, 'state'),
        envFile: path.join(root, '.env'),
        prefix: name,
        store: new RedisBackupStore(source, name),
        out,
      });
    } finally {
      source.disconnect();
    }

    const config = parseConfig({
      REDIS_CLUSTER_NODES: cluster.nodes,
      MAGPIE_QUEUE_PREFIX: name,
      MAGPIE_WORKSPACE: path.join(root, 'cluster-ws'),
    });
    expect(config.redis.prefix).toBe(`{${name}}`);
    const bus = await Bus.connect({ config, logger: silentLogger() });
    try {
      const store = new RedisBackupStore(bus.redis, bus.prefix);
      const result = await restoreBackup({
        file: out,
        workspace: config.workspace,
        stateDir: path.join(root, 'cluster-state'),
        envFile: path.join(root, 'cluster.env'),
        store,
      });
      expect(result.redisKeys).toBe(3);
      // A second restore sees the keys wherever the client's own SCAN would have landed.
      expect(await store.count()).toBe(3);
      expect(await bus.redis.hget(`{${name}}:chat-models`, 'cli:ana')).toBe('big-model');
      expect(await bus.redis.lrange(`{${name}}:mailbox:cli:ana`, 0, -1)).toEqual(['hello?']);
      expect(await bus.redis.pttl(`{${name}}:pairing:code:ABCD`)).toBeGreaterThan(500_000);
      const again = await store.snapshot();
      expect(again.map((e) => e.key).sort()).toEqual(['chat-models', 'mailbox:cli:ana', 'pairing:code:ABCD']);
    } finally {
      await bus.close();
    }
  });
});
