/**
 * The processes of a chaos run (bench/chaos-run.ts): a redis-server with AOF
 * (`appendfsync always`, so a write Redis acknowledged is on disk before the
 * reply leaves: SIGKILL cannot take back anything a publish was told), one
 * `magpie gateway` and several `magpie worker` processes from dist/, and the
 * blows the chaos loop deals them. Each blow is SIGKILL, then a restart that
 * is awaited by its event ("Ready to accept connections", "magpie is running").
 *
 * With `sentinel`, Redis is a Sentinel-watched master with two replicas and three
 * Sentinels (test/fakes/redis-sentinel.ts) and the daemons run with
 * `MAGPIE_REDIS_MIN_REPLICAS=1` (or `minReplicas`); a Redis blow then SIGKILLs the master, waits for
 * the Sentinels to promote a replica (a failover), and starts the killed server
 * again on its port and folder as a replica of the new master.
 *
 * With `cluster`, Redis is a three-master Redis Cluster with two replicas per master
 * (test/fakes/redis-cluster.ts, cluster-node-timeout 2 s) and the daemons run on
 * REDIS_CLUSTER_NODES with `MAGPIE_REDIS_MIN_REPLICAS=1` (or `minReplicas`); a Redis
 * blow SIGKILLs the master serving magpie's slot, waits for one of its replicas to
 * take the slot over, and starts the killed node again, which rejoins as a replica.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { magpie, type Proc } from '../test/e2e/daemon-helpers.js';
import { type RedisClusterHandle, startRedisCluster } from '../test/fakes/redis-cluster.js';
import { type SentinelGroup, startSentinelGroup } from '../test/fakes/redis-sentinel.js';
import { freePort, type RedisHandle, startRedis } from '../test/fakes/redis-server.js';
import { clientTlsEnv, redisTlsArgs, type TestCertificates } from '../test/fakes/tls-certs.js';
import { waitFor } from '../test/fakes/wait-for.js';

/** What the chaos loop can do. */
export type ChaosKind = 'worker' | 'gateway' | 'redis';

/**
 * The workers' and gateways' lock settings. By default the deployed ones (30 s, checked every
 * 15 s): a killed process's jobs are handed back by the others within 3 s (bus/dead-holders.ts),
 * so the run needs no short locks to redo its turns quickly. `shortLocks` gives them 2 s locks
 * checked every second, which lapse in every Redis restart: live workers' turns are then taken
 * over while they run, the harsher test of the turn fence (bus/turn-fence.ts).
 */
const SHORT_LOCKS = ['--lock-duration', '2s', '--stalled-interval', '1s'];

export interface CastOptions {
  workers: number;
  /** The daemons' environment (REDIS_URL is set here). */
  env: NodeJS.ProcessEnv;
  /** The AOF's folder (kept across Redis restarts). */
  redisDir: string;
  /** A Sentinel-watched master with two replicas instead of one server. @defaultValue false */
  sentinel?: boolean;
  /** A Redis Cluster, two replicas per master, instead of one server. @defaultValue false */
  cluster?: boolean;
  /** Sentinel and Cluster modes: MAGPIE_REDIS_MIN_REPLICAS (of the two replicas). @defaultValue 1 */
  minReplicas?: number;
  /** 2 s locks instead of the deployed 30 s (see SHORT_LOCKS). @defaultValue false */
  shortLocks?: boolean;
  /**
   * Every Redis (server, Sentinels, Cluster nodes) serves TLS only with these certificates and asks
   * for client certificates; magpie gets `rediss://` and REDIS_TLS_*. @defaultValue none
   */
  tls?: TestCertificates;
}

/** The running processes and every one that ran (for their logs). */
export class ChaosCast {
  redis!: RedisHandle;
  gateway!: Proc;
  workers: Proc[] = [];
  /** Every magpie process started, dead or alive. */
  readonly all: Array<Proc & { role: string }> = [];
  readonly blows: Record<ChaosKind, number> = { worker: 0, gateway: 0, redis: 0 };
  /** Masters replaced (Sentinel and Cluster modes). */
  failovers = 0;
  /** Milliseconds from each master kill to a new master named (by the Sentinels, or the Cluster's slot map). */
  readonly failoverMs: number[] = [];
  #group: SentinelGroup | undefined;
  #cluster: RedisClusterHandle | undefined;
  /** Sentinel mode: the data servers now running, by port (the killed ones restarted in place). */
  readonly #nodes = new Map<number, RedisHandle>();
  /** Sentinel mode: each Redis server's and Sentinel's own log, by a name with its port (for --logs). */
  readonly #redisLogs = new Map<string, string[]>();
  readonly #o: CastOptions;

  constructor(options: CastOptions) {
    this.#o = options;
  }

  /** Starts Redis, then the gateway and the workers, and waits until each says it is running. */
  async start(): Promise<void> {
    if (this.#o.sentinel) {
      this.#group = await startSentinelGroup({ replicas: 2, tls: this.#o.tls });
      for (const node of [this.#group.master, ...this.#group.replicas]) {
        this.#nodes.set(node.port, node);
        this.#keepLog(`redis-${node.port}`, node);
      }
      for (const sentinel of this.#group.sentinels) this.#keepLog(`sentinel-${sentinel.port}`, sentinel);
      this.redis = this.#group.master;
    } else if (this.#o.cluster) {
      this.#cluster = await startRedisCluster({ replicas: 2, tls: this.#o.tls });
      for (const node of this.#cluster.servers) this.#keepLog(`redis-${node.port}`, node);
      this.redis = this.#cluster.servers[0]!;
    } else {
      this.redis = await this.#server(this.#o.redisDir, await freePort());
    }
    this.gateway = this.#spawn('gateway');
    this.workers = Array.from({ length: this.#o.workers }, () => this.#spawn('worker'));
    await Promise.all([this.gateway, ...this.workers].map(running));
  }

  get redisUrl(): string {
    return this.redis.url;
  }

  /** A redis-server of this run on `port` (TLS only with `tls`, replication too): the AOF in `dir`. */
  #server(dir: string, port: number, args: string[] = []): Promise<RedisHandle> {
    const certs = this.#o.tls;
    const tls = certs ? [...redisTlsArgs(certs, port, 'yes'), '--tls-replication', 'yes'] : [];
    return startRedis({ dir, port, args: [...tls, ...args] });
  }

  /** The Redis variables of every magpie process (and the platform's bus). */
  redisEnv(): Record<string, string | undefined> {
    const certs = this.#o.tls;
    // With Sentinel or a Cluster, a rediss:// REDIS_URL only turns TLS on (its host is not used).
    const tls = certs ? { REDIS_URL: 'rediss://redis', ...clientTlsEnv(certs) } : { REDIS_URL: undefined };
    if (this.#cluster) {
      return {
        ...tls,
        REDIS_CLUSTER_NODES: this.#cluster.nodes,
        MAGPIE_REDIS_MIN_REPLICAS: String(this.#o.minReplicas ?? 1),
      };
    }
    const group = this.#group;
    if (!group)
      return certs
        ? { ...tls, REDIS_URL: `rediss://127.0.0.1:${this.redis.port}` }
        : { REDIS_URL: this.redis.url };
    return {
      ...tls,
      REDIS_SENTINELS: group.addresses,
      REDIS_SENTINEL_NAME: group.name,
      MAGPIE_REDIS_MIN_REPLICAS: String(this.#o.minReplicas ?? 1),
    };
  }

  /** One blow of `kind`; resolves once the victim runs again. */
  async strike(kind: ChaosKind, pick: (n: number) => number): Promise<void> {
    this.blows[kind] += 1;
    if (kind === 'redis' && this.#group) {
      await this.#failover(this.#group);
      return;
    }
    if (kind === 'redis' && this.#cluster) {
      await this.#clusterFailover(this.#cluster);
      return;
    }
    if (kind === 'redis') {
      const { port } = this.redis;
      const exited = new Promise((resolve) => this.redis.process.once('exit', resolve));
      this.redis.process.kill('SIGKILL');
      await exited;
      this.redis = await this.#server(this.#o.redisDir, port);
      return;
    }
    if (kind === 'gateway') {
      await killed(this.gateway);
      this.gateway = this.#spawn('gateway');
      await running(this.gateway);
      return;
    }
    const i = pick(this.workers.length);
    await killed(this.workers[i]!);
    const fresh = this.#spawn('worker');
    this.workers[i] = fresh;
    await running(fresh);
  }

  /** SIGKILLs the master, waits for the Sentinels' new one, restarts the killed server as its replica. */
  async #failover(group: SentinelGroup): Promise<void> {
    const oldPort = await group.masterPort();
    const victim = this.#nodes.get(oldPort);
    if (!victim)
      throw new Error(`the Sentinels name a master on port ${oldPort} that this run did not start`);
    const killedAt = Date.now();
    // Its port stays taken until it is started again (RedisHandle.kill, test/fakes/redis-server.ts).
    await victim.kill();
    const newPort = await waitFor(
      async () => {
        const port = await group.masterPort().catch(() => oldPort);
        return port !== oldPort && port;
      },
      30_000,
      'the Sentinels promoting a replica',
      50,
    );
    this.failovers += 1;
    this.failoverMs.push(Date.now() - killedAt);
    await victim.releasePort();
    const back = await this.#server(victim.dir, oldPort, ['--replicaof', '127.0.0.1', String(newPort)]);
    this.#nodes.set(oldPort, back);
    this.#keepLog(`redis-${oldPort}`, back);
    this.redis = this.#nodes.get(newPort) ?? back;
  }

  /** SIGKILLs the master serving magpie's slot, waits for a replica to take it over, restarts the killed node. */
  async #clusterFailover(cluster: RedisClusterHandle): Promise<void> {
    // Every key of one magpie shares its prefix's hash tag, hence one slot.
    const slotKey = `{${this.#o.env.MAGPIE_QUEUE_PREFIX}}`;
    const oldPort = await cluster.ownerPort(slotKey);
    const victim = cluster.servers.find((s) => s.port === oldPort);
    if (!victim) throw new Error(`the Cluster names a master on port ${oldPort} that this run did not start`);
    const killedAt = Date.now();
    await victim.kill(); // its port held until the restart below
    await waitFor(
      async () => (await cluster.ownerPort(slotKey, oldPort).catch(() => oldPort)) !== oldPort,
      30_000,
      "a replica taking over magpie's slot",
      50,
    );
    this.failovers += 1;
    this.failoverMs.push(Date.now() - killedAt);
    this.#keepLog(`redis-${oldPort}`, await cluster.restart(oldPort));
  }

  /** Stops every magpie process (SIGTERM, awaited), then Redis. */
  async stop(): Promise<void> {
    await Promise.all(
      this.all.map(async (p) => {
        if (p.child.exitCode !== null || p.child.signalCode !== null) return;
        p.child.kill('SIGTERM');
        await p.exited;
      }),
    );
    if (this.#group) {
      // Servers restarted in place first (their folders are the group's), then the group removes all.
      const first = new Set([this.#group.master, ...this.#group.replicas]);
      for (const node of this.#nodes.values()) if (!first.has(node)) await node.stop();
      await this.#group.stop();
      this.#group = undefined;
      return;
    }
    if (this.#cluster) {
      await this.#cluster.stop();
      this.#cluster = undefined;
      return;
    }
    await this.redis?.stop();
  }

  /** Log lines of every magpie process with this `msg`. */
  count(msg: string): number {
    const needle = `"msg":${JSON.stringify(msg)}`;
    return this.all.reduce(
      (sum, p) =>
        sum +
        p
          .stderr()
          .split('\n')
          .filter((l) => l.includes(needle)).length,
      0,
    );
  }

  /** The distinct `err.message`s of log lines with this `msg` (at most `limit`). */
  reasons(msg: string, limit = 5): string[] {
    const needle = `"msg":${JSON.stringify(msg)}`;
    const out = new Set<string>();
    for (const p of this.all)
      for (const line of p.stderr().split('\n')) {
        if (!line.includes(needle)) continue;
        const { err } = JSON.parse(line) as { err?: string | { message?: string } };
        const reason = typeof err === 'string' ? err : (err?.message ?? JSON.stringify(err));
        if (out.size < limit) out.add(reason);
      }
    return [...out];
  }

  /** Writes each magpie process's log to `dir` (`<n>-<role>.log`), and in Sentinel and Cluster modes each server's (and Sentinel's). */
  writeLogs(dir: string): void {
    mkdirSync(dir, { recursive: true });
    this.all.forEach((p, i) => {
      writeFileSync(path.join(dir, `${String(i).padStart(2, '0')}-${p.role}.log`), p.stderr());
    });
    for (const [name, lines] of this.#redisLogs) writeFileSync(path.join(dir, `${name}.log`), lines.join(''));
  }

  /** Keeps what a Redis server or Sentinel writes (a server restarted on the same port adds to its log). */
  #keepLog(name: string, server: { process: { stdout: NodeJS.ReadableStream | null } }): void {
    const lines = this.#redisLogs.get(name) ?? [];
    this.#redisLogs.set(name, lines);
    server.process.stdout?.on('data', (chunk: Buffer) => lines.push(chunk.toString()));
  }

  #spawn(role: 'gateway' | 'worker'): Proc {
    const proc = magpie([role, ...(this.#o.shortLocks ? SHORT_LOCKS : [])], {
      ...this.#o.env,
      ...this.redisEnv(),
    });
    this.all.push(Object.assign(proc, { role }));
    return proc;
  }
}

function running(proc: Proc): Promise<void> {
  return proc.waitFor(/magpie is running/, 60_000);
}

async function killed(proc: Proc): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill('SIGKILL');
  await proc.exited;
}
