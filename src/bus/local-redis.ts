/**
 * The private redis-server used when REDIS_URL is unset: `magpie start`
 * spawns one bound to 127.0.0.1 on a free port (AOF on, no eviction) with its
 * data in `<stateDir>/redis/`, outside the workspace, and a random password
 * (`requirepass`) kept in `<stateDir>/redis/password` (0600). The password is
 * handed to redis-server on its stdin, never on the command line (which `ps`
 * shows). `{ url (with the password), pid }` goes to `<stateDir>/redis/magpie.json`
 * (0600), where the other `magpie` processes of the same user find it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import type { Config } from '../config/index.js';
import { ensurePrivateDir, readOrCreateSecret, writePrivateFile } from '../config/state-dir.js';
import { AppError, ExitCode } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { migrateLegacyRedis } from './local-redis-migrate.js';
import { processRuns } from './pid.js';
import { displayUrl, type RedisTarget, serverTarget, withQuickConnection } from './redis.js';

const InfoSchema = z.object({ url: z.string().min(1), pid: z.number().int().positive() });

/** What `<stateDir>/redis/magpie.json` records. */
export type LocalRedisInfo = z.infer<typeof InfoSchema>;

/** A running private redis-server. `stop()` is a no-op when this process did not start it. */
export interface LocalRedis extends LocalRedisInfo {
  /** True when this process spawned it (and will stop it). */
  owned: boolean;
  /** Its data folder, `<stateDir>/redis`. */
  dir: string;
  stop(): Promise<void>;
}

export interface StartLocalRedisOptions {
  /** The workspace; an old `<workspace>/.redis/` is moved into the state folder once. */
  workspace: string;
  /** config.stateDir: the data, the password and the info file live in `<stateDir>/redis/`. */
  stateDir: string;
  logger: Logger;
}

export const REDIS_NOT_FOUND_MESSAGE =
  'redis-server not found: install Redis (apt-get install redis-server) or set REDIS_URL';

/** The private Redis's folder: its data, `password` and `magpie.json`. */
export function localRedisDir(stateDir: string): string {
  return path.join(stateDir, 'redis');
}

/** The file holding the private Redis's password (0600). */
export function localRedisPasswordFile(stateDir: string): string {
  return path.join(localRedisDir(stateDir), 'password');
}

function infoFile(stateDir: string): string {
  return path.join(localRedisDir(stateDir), 'magpie.json');
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

/** The recorded private Redis of `stateDir`, or undefined when none is recorded. */
function readInfo(stateDir: string): LocalRedisInfo | undefined {
  let text: string;
  try {
    text = readFileSync(infoFile(stateDir), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new AppError('INTERNAL', `cannot read ${infoFile(stateDir)}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  try {
    const parsed = InfoSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch (err) {
    if (err instanceof SyntaxError) return undefined; // a torn or foreign file: treat as not recorded
    throw err;
  }
}

/**
 * The URL (with its password) of the live private redis-server of `stateDir`
 * (pid alive and an authenticated PING answered), or undefined.
 */
export async function findLocalRedis(stateDir: string): Promise<string | undefined> {
  const info = readInfo(stateDir);
  if (!info || !processRuns(info.pid)) return undefined;
  return (await pings(info.url)) ? info.url : undefined;
}

/**
 * The Redis URL a process should use: REDIS_URL, else the private
 * redis-server started by `magpie start`. Throws a one-line AppError otherwise.
 */
export async function resolveRedisUrl(config: Config): Promise<string> {
  if (config.redis.url) return config.redis.url;
  const local = await findLocalRedis(config.stateDir);
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
 * Where a process finds the bus's Redis: the Sentinels' master when
 * REDIS_SENTINELS is set, the Cluster when REDIS_CLUSTER_NODES is,
 * else {@link resolveRedisUrl}'s server.
 */
export async function resolveRedisTarget(config: Config): Promise<RedisTarget> {
  const { sentinel, cluster } = config.redis;
  if (sentinel) return { kind: 'sentinel', ...sentinel };
  if (cluster) return { kind: 'cluster', ...cluster };
  return serverTarget(await resolveRedisUrl(config), config.redis.tls);
}

/**
 * The configuration redis-server reads from its stdin (`redis-server -`):
 * everything, the password included, so nothing secret is on its command line.
 */
export function localRedisConfig(options: { port: number; dir: string; password: string }): string {
  return [
    'bind 127.0.0.1',
    `port ${options.port}`,
    `dir ${quoteConfigValue(options.dir)}`,
    'appendonly yes',
    'maxmemory-policy noeviction',
    'protected-mode yes',
    'daemonize no',
    `requirepass ${quoteConfigValue(options.password)}`,
    '',
  ].join('\n');
}

/** The arguments redis-server is started with: only `-` (read the configuration from stdin). */
export const LOCAL_REDIS_ARGS: readonly string[] = ['-'];

/**
 * Reuses this state folder's running private redis-server or spawns one. It
 * runs in its own process group, so Ctrl-C reaches magpie first and magpie
 * stops it last, after the running turns finished.
 */
export async function startLocalRedis(options: StartLocalRedisOptions): Promise<LocalRedis> {
  const { stateDir, logger } = options;
  const dir = localRedisDir(stateDir);
  const existing = await findLocalRedis(stateDir);
  const recorded = existing ? readInfo(stateDir) : undefined;
  if (existing && recorded) {
    logger.info({ url: displayUrl(existing), dir }, 'using the running private redis-server');
    return { ...recorded, dir, owned: false, stop: async () => undefined };
  }
  const binary = findRedisServer();
  if (!binary)
    throw new AppError('REDIS_NOT_INSTALLED', REDIS_NOT_FOUND_MESSAGE, { exitCode: ExitCode.config });
  ensurePrivateDir(stateDir);
  await migrateLegacyRedis({ workspace: options.workspace, stateDir, target: dir, logger });
  ensurePrivateDir(dir);
  const password = readOrCreateSecret(localRedisPasswordFile(stateDir));
  const port = await freePort();
  const child = spawn(binary, [...LOCAL_REDIS_ARGS], {
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdin?.on('error', () => undefined); // an early exit is reported by waitReady
  child.stdin?.end(localRedisConfig({ port, dir, password }));
  await waitReady(child);
  const info: LocalRedisInfo = {
    url: `redis://:${encodeURIComponent(password)}@127.0.0.1:${port}`,
    pid: child.pid ?? 0,
  };
  writePrivateFile(infoFile(stateDir), `${JSON.stringify(info)}\n`);
  logger.info({ url: displayUrl(info.url), dir }, 'started a private redis-server');
  let stopping: Promise<void> | undefined;
  return {
    ...info,
    dir,
    owned: true,
    stop() {
      stopping ??= stopChild(child, infoFile(stateDir));
      return stopping;
    },
  };
}

/** A value for redis.conf: double-quoted, with `\` and `"` escaped (sdssplitargs rules). */
function quoteConfigValue(value: string): string {
  const escaped = value
    .replaceAll('\\', '\\\\')
    .replaceAll('"', '\\"')
    .replaceAll('\n', '\\n')
    .replaceAll('\r', '\\r');
  return `"${escaped}"`;
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
          { exitCode: ExitCode.unavailable },
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

/** True when `url` answers PING (an authenticated one when the URL carries a password). */
export async function pings(url: string): Promise<boolean> {
  try {
    return (await withQuickConnection(url, (redis) => redis.ping())) === 'PONG';
  } catch {
    return false; // refused, timed out or NOAUTH/WRONGPASS: not a Redis we can use
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
