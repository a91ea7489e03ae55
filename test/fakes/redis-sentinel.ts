/**
 * A real Sentinel-watched Redis for tests: a master, replicas (`--replicaof`)
 * and Sentinels (`redis-server <conf> --sentinel`), all on free 127.0.0.1
 * ports, with short failure detection so a killed master is replaced within
 * a few seconds. Resolves once every Sentinel knows the others and the replicas.
 * With `tls`, every server and Sentinel serves TLS only and asks each client for a
 * certificate the test CA signed (replication and the Sentinels' links included).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import type { RedisTarget } from '../../src/bus/redis.js';
import { freePort, type RedisHandle, startRedis, stopProcess } from './redis-server.js';
import { clientTls, redisTlsArgs, type TestCertificates } from './tls-certs.js';
import { waitFor } from './wait-for.js';

export interface SentinelHandle {
  port: number;
  process: ChildProcess;
}

export interface SentinelGroup {
  /** The master's name the Sentinels monitor. */
  name: string;
  master: RedisHandle;
  replicas: RedisHandle[];
  sentinels: SentinelHandle[];
  /** `REDIS_SENTINELS`: `127.0.0.1:p1,127.0.0.1:p2,…`. */
  addresses: string;
  /** The master's port as the Sentinels report it now (`SENTINEL get-master-addr-by-name`). */
  masterPort(): Promise<number>;
  stop(): Promise<void>;
}

export interface SentinelGroupOptions {
  /** @defaultValue 'mymaster' */
  name?: string;
  /** @defaultValue 1 */
  replicas?: number;
  /** @defaultValue 3 */
  sentinels?: number;
  /**
   * Milliseconds without an answer before a master is taken for down. Keep it above a second:
   * a Sentinel pings every second at most, and at 1000 a master it had just switched to often
   * missed the first ping's deadline — a second failover a second after each real one, which in
   * a six-minute chaos run promoted a stale former master and lost acknowledged messages.
   * @defaultValue 2000
   */
  downAfterMs?: number;
  /** TLS only, everywhere, with these certificates (client certificates asked for). */
  tls?: TestCertificates;
}

/** The configuration file of one Sentinel (Sentinel rewrites it, so each has its own). */
function sentinelConfig(
  port: number,
  dir: string,
  name: string,
  masterPort: number,
  downAfterMs: number,
  tls: TestCertificates | undefined,
) {
  const listen = tls
    ? [
        'port 0',
        `tls-port ${port}`,
        `tls-cert-file ${tls.serverCert}`,
        `tls-key-file ${tls.serverKey}`,
        `tls-ca-cert-file ${tls.ca}`,
        'tls-auth-clients yes',
        'tls-replication yes',
      ]
    : [`port ${port}`];
  return [
    'bind 127.0.0.1',
    ...listen,
    `dir ${dir}`,
    `sentinel monitor ${name} 127.0.0.1 ${masterPort} 2`,
    `sentinel down-after-milliseconds ${name} ${downAfterMs}`,
    `sentinel failover-timeout ${name} 5000`,
    `sentinel parallel-syncs ${name} 2`,
    '',
  ].join('\n');
}

async function startSentinel(
  dir: string,
  name: string,
  masterPort: number,
  downAfterMs: number,
  tls: TestCertificates | undefined,
): Promise<SentinelHandle> {
  const port = await freePort();
  const file = path.join(dir, `sentinel-${port}.conf`);
  writeFileSync(file, sentinelConfig(port, dir, name, masterPort, downAfterMs, tls));
  const child = spawn('redis-server', [file, '--sentinel'], { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes(`+monitor master ${name}`)) {
        child.stdout?.off('data', onData);
        child.stdout?.resume();
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.resume();
    child.once('error', (err) => reject(new Error(`redis-sentinel could not start: ${err.message}`)));
    child.once('exit', (code) => reject(new Error(`redis-sentinel exited with ${code}: ${out.slice(-500)}`)));
  });
  return { port, process: child };
}

/** Runs `work` on a short connection to the Sentinel at `port`. */
async function askSentinel<T>(
  port: number,
  tls: RedisOptions['tls'],
  work: (redis: Redis) => Promise<T>,
): Promise<T> {
  const redis = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    ...(tls ? { tls } : {}),
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}

/** Starts the master, its replicas (in sync) and the Sentinels (each knowing the others and the replicas). */
export async function startSentinelGroup(options: SentinelGroupOptions = {}): Promise<SentinelGroup> {
  const name = options.name ?? 'mymaster';
  const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-sentinel-'));
  const certs = options.tls;
  const tls = certs ? clientTls(certs) : undefined;
  /** A server of the group: TLS only with `certs`, replication over TLS too. */
  const server = async (args: string[] = []) => {
    if (!certs) return startRedis({ args });
    const port = await freePort();
    return startRedis({
      port,
      args: [...redisTlsArgs(certs, port, 'yes'), '--tls-replication', 'yes', ...args],
    });
  };
  const master = await server();
  const replicas: RedisHandle[] = [];
  const sentinels: SentinelHandle[] = [];
  const stop = async () => {
    // Sentinels first, so none starts a failover while the servers stop; each stop is bounded.
    await Promise.all(sentinels.map((s) => stopProcess(s.process)));
    await Promise.all([...replicas, master].map((r) => r.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < (options.replicas ?? 1); i++) {
      replicas.push(await server(['--replicaof', '127.0.0.1', String(master.port)]));
    }
    const info = new Redis({
      host: '127.0.0.1',
      port: master.port,
      lazyConnect: true,
      ...(tls ? { tls } : {}),
    });
    await info.connect();
    try {
      await waitFor(
        async () =>
          Number(/connected_slaves:(\d+)/.exec(await info.info('replication'))?.[1]) === replicas.length,
        10_000,
        'every replica in sync',
      );
    } finally {
      info.disconnect();
    }
    for (let i = 0; i < (options.sentinels ?? 3); i++) {
      sentinels.push(await startSentinel(dir, name, master.port, options.downAfterMs ?? 2_000, certs));
    }
    // A failover needs a majority of the Sentinels each one knows: wait until they found each other.
    for (const s of sentinels) {
      await waitFor(
        () =>
          askSentinel(s.port, tls, async (redis) => {
            const others = (await redis.call('SENTINEL', 'SENTINELS', name)) as unknown[];
            const known = (await redis.call('SENTINEL', 'REPLICAS', name)) as unknown[];
            return others.length === sentinels.length - 1 && known.length === replicas.length;
          }),
        15_000,
        `Sentinel ${s.port} knowing the others and the replicas`,
      );
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    name,
    master,
    replicas,
    sentinels,
    addresses: sentinels.map((s) => `127.0.0.1:${s.port}`).join(','),
    masterPort: () =>
      askSentinel(sentinels[0]!.port, tls, async (redis) => {
        const addr = (await redis.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as [string, string];
        return Number(addr[1]);
      }),
    stop,
  };
}

/** What magpie connects to for `group` (its Sentinels, no password, database 0). */
export function sentinelTarget(group: SentinelGroup): RedisTarget {
  return {
    kind: 'sentinel',
    name: group.name,
    sentinels: group.sentinels.map((s) => ({ host: '127.0.0.1', port: s.port })),
    db: 0,
    sentinelPassword: undefined,
    username: undefined,
    password: undefined,
    tls: undefined,
  };
}
