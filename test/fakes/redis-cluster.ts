/**
 * Starts a real three-master Redis Cluster on free loopback ports for tests:
 * three `redis-server --cluster-enabled yes` (each with its own folder and
 * cluster config file), joined by `redis-cli --cluster create … --cluster-replicas 0`.
 * Resolves once every node reports `cluster_state:ok` and all 16384 slots are served.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { type RedisHandle, startRedis } from './redis-server.js';
import { waitFor } from './wait-for.js';

const run = promisify(execFile);

export interface RedisClusterHandle {
  /** The masters, as `REDIS_CLUSTER_NODES` takes them: `127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3`. */
  nodes: string;
  servers: RedisHandle[];
  stop(): Promise<void>;
}

/** Three masters, every slot assigned, no replicas; each node with `password` (requirepass) when given. */
export async function startRedisCluster(options: { password?: string } = {}): Promise<RedisClusterHandle> {
  const masters = 3;
  const auth = options.password ? ['--requirepass', options.password, '--masterauth', options.password] : [];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-redis-cluster-'));
  const servers: RedisHandle[] = [];
  const stop = async () => {
    await Promise.all(servers.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters; i++) {
      const nodeDir = path.join(dir, `node-${i}`);
      mkdirSync(nodeDir);
      const clusterArgs = [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        path.join(nodeDir, 'nodes.conf'),
      ];
      servers.push(await startRedis({ dir: nodeDir, args: [...clusterArgs, ...auth] }));
    }
    const addresses = servers.map((s) => `127.0.0.1:${s.port}`);
    // The password goes by REDISCLI_AUTH, not on redis-cli's command line.
    const env = { ...process.env, ...(options.password ? { REDISCLI_AUTH: options.password } : {}) };
    const create = ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes'];
    await run('redis-cli', create, { timeout: 20_000, env });
    // `--cluster create` returns once the slots are assigned; each node learns the others' over the bus.
    for (const server of servers) {
      const redis = new Redis(server.url, {
        lazyConnect: true,
        maxRetriesPerRequest: 1,
        password: options.password,
      });
      try {
        await redis.connect();
        await waitFor(
          async () => {
            const info = await redis.cluster('INFO');
            return info.includes('cluster_state:ok') && info.includes(`cluster_known_nodes:${masters}`);
          },
          15_000,
          `cluster_state:ok on 127.0.0.1:${server.port}`,
        );
      } finally {
        redis.disconnect();
      }
    }
    return { nodes: addresses.join(','), servers, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
