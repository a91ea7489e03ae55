/**
 * The processes of a chaos run (bench/chaos-run.ts): a redis-server with AOF
 * (`appendfsync always`, so a write Redis acknowledged is on disk before the
 * reply leaves: SIGKILL cannot take back anything a publish was told), one
 * `magpie gateway` and several `magpie worker` processes from dist/, and the
 * blows the chaos loop deals them. Each blow is SIGKILL, then a restart that
 * is awaited by its event ("Ready to accept connections", "magpie is running").
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { magpie, type Proc } from '../test/e2e/daemon-helpers.js';
import { type RedisHandle, startRedis } from '../test/fakes/redis-server.js';

/** What the chaos loop can do. */
export type ChaosKind = 'worker' | 'gateway' | 'redis';

/** A crashed turn is taken again after the lock (2 s) + a stall check (1 s), not the default 30 s + 15 s. */
const FAST_REDO = ['--lock-duration', '2s', '--stalled-interval', '1s'];

export interface CastOptions {
  workers: number;
  /** The daemons' environment (REDIS_URL is set here). */
  env: NodeJS.ProcessEnv;
  /** The AOF's folder (kept across Redis restarts). */
  redisDir: string;
}

/** The running processes and every one that ran (for their logs). */
export class ChaosCast {
  redis!: RedisHandle;
  gateway!: Proc;
  workers: Proc[] = [];
  /** Every magpie process started, dead or alive. */
  readonly all: Array<Proc & { role: string }> = [];
  readonly blows: Record<ChaosKind, number> = { worker: 0, gateway: 0, redis: 0 };
  readonly #o: CastOptions;

  constructor(options: CastOptions) {
    this.#o = options;
  }

  /** Starts Redis, then the gateway and the workers, and waits until each says it is running. */
  async start(): Promise<void> {
    this.redis = await startRedis({ dir: this.#o.redisDir });
    this.gateway = this.#spawn('gateway');
    this.workers = Array.from({ length: this.#o.workers }, () => this.#spawn('worker'));
    await Promise.all([this.gateway, ...this.workers].map(running));
  }

  get redisUrl(): string {
    return this.redis.url;
  }

  /** One blow of `kind`; resolves once the victim runs again. */
  async strike(kind: ChaosKind, pick: (n: number) => number): Promise<void> {
    this.blows[kind] += 1;
    if (kind === 'redis') {
      const { port } = this.redis;
      const exited = new Promise((resolve) => this.redis.process.once('exit', resolve));
      this.redis.process.kill('SIGKILL');
      await exited;
      this.redis = await startRedis({ dir: this.#o.redisDir, port });
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

  /** Stops every magpie process (SIGTERM, awaited), then Redis. */
  async stop(): Promise<void> {
    await Promise.all(
      this.all.map(async (p) => {
        if (p.child.exitCode !== null || p.child.signalCode !== null) return;
        p.child.kill('SIGTERM');
        await p.exited;
      }),
    );
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

  /** Writes each magpie process's log to `dir` (`<n>-<role>.log`). */
  writeLogs(dir: string): void {
    mkdirSync(dir, { recursive: true });
    this.all.forEach((p, i) => {
      writeFileSync(path.join(dir, `${String(i).padStart(2, '0')}-${p.role}.log`), p.stderr());
    });
  }

  #spawn(role: 'gateway' | 'worker'): Proc {
    const proc = magpie([role, ...FAST_REDO], { ...this.#o.env, REDIS_URL: this.redis.url });
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
