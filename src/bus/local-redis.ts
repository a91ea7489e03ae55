/**
 * The private redis-server used when REDIS_URL is unset: `magpie start` spawns
 * one bound to 127.0.0.1 on a free port (AOF on, no eviction, data in
 * `<workspace>/.redis/`) and records `{ url, pid }` in
 * `<workspace>/.redis/magpie.json`, where other `magpie` processes find it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Redis } from 'ioredis';
import { z } from 'zod';
import type { Config } from '../config/index.js';
import { AppError, ExitCode } from '../errors/index.js';
import type { Logger } from '../log/index.js';

const InfoSchema = z.object({ url: z.string().min(1), pid: z.number().int().positive() });

/** What `<workspace>/.redis/magpie.json` records. */
export type LocalRedisInfo = z.infer<typeof InfoSchema>;

/** A running private redis-server. `stop()` is a no-op when this process did not start it. */
export interface LocalRedis extends LocalRedisInfo {
  /** True when this process spawned it (and will stop it). */
  owned: boolean;
  stop(): Promise<void>;
}

export const REDIS_NOT_FOUND_MESSAGE =
  'redis-server not found: install Redis (apt-get install redis-server) or set REDIS_URL';

export function localRedisDir(workspace: string): string {
  return path.join(workspace, '.redis');
}

function infoFile(workspace: string): string {
  return path.join(localRedisDir(workspace), 'magpie.json');
}

/** The path of `redis-server` on PATH, or undefined. */
export function findRedisServer(env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, 'redis-server');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this folder; keep looking
    }
  }
  return undefined;
}

/** The URL of a live private redis-server of this workspace (pid alive and PING answered), or undefined. */
export async function findLocalRedis(workspace: string): Promise<string | undefined> {
  let info: LocalRedisInfo;
  try {
    const parsed = InfoSchema.safeParse(JSON.parse(readFileSync(infoFile(workspace), 'utf8')));
    if (!parsed.success) return undefined;
    info = parsed.data;
  } catch {
    return undefined; // no file (or unreadable): no local Redis recorded
  }
  if (!pidAlive(info.pid)) return undefined;
  return (await pings(info.url)) ? info.url : undefined;
}

/**
 * The Redis URL a process should use: REDIS_URL, else the private
 * redis-server started by `magpie start`. Throws a one-line AppError otherwise.
 */
export async function resolveRedisUrl(config: Config): Promise<string> {
  if (config.redis.url) return config.redis.url;
  const local = await findLocalRedis(config.workspace);
  if (local) return local;
  if (!findRedisServer()) {
    throw new AppError('REDIS_NOT_INSTALLED', REDIS_NOT_FOUND_MESSAGE, { exitCode: ExitCode.config });
  }
  throw new AppError(
    'REDIS_UNAVAILABLE',
    `no Redis: REDIS_URL is unset and no private redis-server is running for ${config.workspace}: run "magpie start" first`,
    { exitCode: ExitCode.unavailable },
  );
}

/**
 * Reuses this workspace's running private redis-server or spawns one. It runs
 * in its own process group, so Ctrl-C reaches magpie first and magpie stops
 * it last, after the running turns finished.
 */
export async function startLocalRedis(options: { workspace: string; logger: Logger }): Promise<LocalRedis> {
  const existing = await findLocalRedis(options.workspace);
  if (existing) {
    const info = InfoSchema.parse(JSON.parse(readFileSync(infoFile(options.workspace), 'utf8')));
    options.logger.info({ url: existing }, 'using the running private redis-server');
    return { ...info, owned: false, stop: async () => undefined };
  }
  const binary = findRedisServer();
  if (!binary)
    throw new AppError('REDIS_NOT_INSTALLED', REDIS_NOT_FOUND_MESSAGE, { exitCode: ExitCode.config });
  const dir = localRedisDir(options.workspace);
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const child = spawn(
    binary,
    [
      '--bind',
      '127.0.0.1',
      '--port',
      String(port),
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--maxmemory-policy',
      'noeviction',
      '--protected-mode',
      'yes',
      '--daemonize',
      'no',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  await waitReady(child);
  const info: LocalRedisInfo = { url: `redis://127.0.0.1:${port}`, pid: child.pid ?? 0 };
  writeFileSync(infoFile(options.workspace), `${JSON.stringify(info)}\n`);
  options.logger.info({ url: info.url, dir }, 'started a private redis-server');
  let stopping: Promise<void> | undefined;
  return {
    ...info,
    owned: true,
    stop() {
      stopping ??= stopChild(child, infoFile(options.workspace));
      return stopping;
    },
  };
}

async function stopChild(child: ChildProcess, file: string): Promise<void> {
  rmSync(file, { force: true });
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

function waitReady(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Ready to accept connections')) {
        child.stdout?.off('data', onData);
        child.stdout?.resume();
        child.stderr?.resume();
        child.off('exit', onExit);
        resolve();
      }
    };
    const onExit = (code: number | null) =>
      reject(
        new AppError(
          'REDIS_UNAVAILABLE',
          `redis-server exited (${code}) at start: ${out.trim().split('\n').pop()}`,
          {
            exitCode: ExitCode.unavailable,
          },
        ),
      );
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
    child.once('error', (err) =>
      reject(
        new AppError('REDIS_UNAVAILABLE', `redis-server could not start: ${err.message}`, { cause: err }),
      ),
    );
  });
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function pings(url: string): Promise<boolean> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
