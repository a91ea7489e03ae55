/**
 * Starts a real three-master Redis Cluster on free loopback ports for tests:
 * three `redis-server --cluster-enabled yes` (each with its own folder and
 * cluster config file), joined by `redis-cli --cluster create … --cluster-replicas N`,
 * with N replicas per master when asked (for failover tests). Resolves once every
 * node reports `cluster_state:ok`, knows every other node, and each master has its
 * replicas in sync.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis, type RedisOptions } from 'ioredis';
import type { RedisTarget } from '../../src/bus/redis.js';
import { freePort, type RedisHandle, startRedis } from './redis-server.js';
import { clientTls, redisTlsArgs, type TestCertificates } from './tls-certs.js';
import { waitFor } from './wait-for.js';

const run = promisify(execFile);

export interface RedisClusterHandle {
  /** The masters, as `REDIS_CLUSTER_NODES` takes them: `127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3`. */
  nodes: string;
  /** Every node: the three masters first (in `nodes`' order), then the replicas. */
  servers: RedisHandle[];
  /** The port of the node that serves `key`'s slot now, as a live node other than `except` says. */
  ownerPort(key: string, except?: number): Promise<number>;
  /**
   * Starts the node on `port` again (after a kill) with its folder and settings: it rejoins
   * from its nodes.conf, a killed master as a replica of the one that replaced it. Resolves
   * once it is a replica in sync with its master.
   */
  restart(port: number): Promise<RedisHandle>;
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  /** requirepass (and masterauth) on every node. */
  password?: string;
  /** Replicas per master. @defaultValue 0 */
  replicas?: number;
  /**
   * `cluster-node-timeout`: how long a master may not answer before the others take it
   * for failed and its replica takes over. @defaultValue 2000 with replicas (Redis's own 15000 without)
   */
  nodeTimeoutMs?: number;
  /** TLS only on every node (client certificates asked for; replication and the Cluster bus over TLS too). */
  tls?: TestCertificates;
}

/** Three masters, every slot assigned, `replicas` replicas each; each node with `password` (requirepass) when given. */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisClusterHandle> {
  const masters = 3;
  const replicas = options.replicas ?? 0;
  const total = masters * (1 + replicas);
  const nodeTimeout = options.nodeTimeoutMs ?? (replicas > 0 ? 2_000 : undefined);
  const auth = options.password ? ['--requirepass', options.password, '--masterauth', options.password] : [];
  const certs = options.tls;
  const tls = certs ? clientTls(certs) : undefined;
  const tlsArgs = (port: number) =>
    certs ? [...redisTlsArgs(certs, port, 'yes'), '--tls-replication', 'yes', '--tls-cluster', 'yes'] : [];
  const connection = { password: options.password, tls };
  const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-redis-cluster-'));
  const servers: RedisHandle[] = [];
  const restarts = new Map<number, () => Promise<RedisHandle>>();
  const restart = async (port: number) => {
    const start = restarts.get(port);
    const i = servers.findIndex((s) => s.port === port);
    if (!start || i < 0) throw new Error(`no node of this Cluster on port ${port}`);
    await servers[i]!.releasePort();
    const server = await start();
    servers[i] = server;
    // Back as a replica only once it has copied its master: until then it could not take over.
    await untilNode(
      server,
      connection,
      async (redis) => /master_link_status:up/.test(await redis.info('replication')),
      30_000,
      `the node on port ${port} in sync with its master`,
    );
    return server;
  };
  const stop = async () => {
    await Promise.all(servers.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < total; i++) {
      const nodeDir = path.join(dir, `node-${i}`);
      mkdirSync(nodeDir);
      const port = await freePort();
      // The Cluster bus's port is a free one of its own: by default it is the node's port + 10000,
      // which nothing checked, and a test's server already there (more Clusters run in the suite
      // now) made a node fail to start with "Address already in use".
      let busPort = await freePort();
      while (busPort === port) busPort = await freePort();
      const clusterArgs = [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        path.join(nodeDir, 'nodes.conf'),
        '--cluster-port',
        String(busPort),
        ...(nodeTimeout === undefined ? [] : ['--cluster-node-timeout', String(nodeTimeout)]),
      ];
      const args = [...clusterArgs, ...auth, ...tlsArgs(port)];
      const server = await startRedis({ dir: nodeDir, port, args });
      servers.push(server);
      restarts.set(server.port, () => startRedis({ dir: nodeDir, port, args }));
    }
    const addresses = servers.map((s) => `127.0.0.1:${s.port}`);
    // The password goes by REDISCLI_AUTH, not on redis-cli's command line.
    const env = { ...process.env, ...(options.password ? { REDISCLI_AUTH: options.password } : {}) };
    // redis-cli makes the first three the masters and gives each of them replicas from the rest.
    const create = [
      '--cluster',
      'create',
      ...addresses,
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
      ...(certs ? ['--tls', '--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey] : []),
    ];
    await run('redis-cli', create, { timeout: 20_000, env });
    // `--cluster create` returns once the slots are assigned; each node learns the others' over the bus.
    for (const server of servers) {
      await untilNode(
        server,
        connection,
        async (redis) => {
          const info = await redis.cluster('INFO');
          if (!(info.includes('cluster_state:ok') && info.includes(`cluster_known_nodes:${total}`)))
            return false;
          const replication = await redis.info('replication');
          return !replication.includes('role:master') || connectedReplicas(replication) === replicas;
        },
        15_000,
        `cluster_state:ok on 127.0.0.1:${server.port}`,
      );
    }
    return {
      nodes: addresses.slice(0, masters).join(','),
      servers,
      ownerPort: (key, except) => ownerPort(servers, key, connection, except),
      restart,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Replicas a master's `INFO replication` lists as online and caught up. */
function connectedReplicas(replication: string): number {
  return replication.split('\n').filter((line) => /^slave\d+:.*state=online/.test(line)).length;
}

/** Asks the first live node (not `except`) which node serves `key`'s slot. */
async function ownerPort(
  servers: RedisHandle[],
  key: string,
  connection: NodeConnection,
  except: number | undefined,
): Promise<number> {
  const live = servers.find((s) => s.port !== except && s.process.exitCode === null && !s.process.signalCode);
  if (!live) throw new Error('no live node in the Cluster');
  const redis = nodeConnection(live, connection);
  try {
    await redis.connect();
    const slot = Number(await redis.cluster('KEYSLOT', key));
    const range = (await redis.cluster('SLOTS')).find(([from, to]) => slot >= from && slot <= to);
    const master = range?.[2];
    if (!master) throw new Error(`no node serves slot ${slot}`);
    return master[1];
  } finally {
    redis.disconnect();
  }
}

/** How the fake itself connects to a node: its password, and TLS options when the nodes serve TLS. */
interface NodeConnection {
  password: string | undefined;
  tls: RedisOptions['tls'] | undefined;
}

/** An unconnected connection of the fake's own to one node. */
function nodeConnection(server: RedisHandle, { password, tls }: NodeConnection): Redis {
  return new Redis({
    host: '127.0.0.1',
    port: server.port,
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    password,
    ...(tls ? { tls } : {}),
  });
}

/** Waits until `check` holds on a connection of its own to `server`. */
async function untilNode(
  server: RedisHandle,
  connection: NodeConnection,
  check: (redis: Redis) => Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const redis = nodeConnection(server, connection);
  try {
    await redis.connect();
    await waitFor(() => check(redis), timeoutMs, what);
  } finally {
    redis.disconnect();
  }
}

/** What magpie connects to for `cluster` (its masters as startup nodes, no password). */
export function clusterTarget(cluster: RedisClusterHandle): RedisTarget {
  const nodes = cluster.nodes.split(',').map((node) => {
    const [host, port] = node.split(':');
    return { host: host ?? '127.0.0.1', port: Number(port) };
  });
  return { kind: 'cluster', nodes, username: undefined, password: undefined, tls: undefined };
}
