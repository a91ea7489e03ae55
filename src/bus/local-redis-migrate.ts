/**
 * The one-time move of the private Redis's data out of the workspace. Before
 * the state folder existed, `magpie start` kept it in `<workspace>/.redis/`,
 * where the assistant's tools could read and write it. On the first start
 * after the upgrade, its data (queued messages, schedules, pairings) moves
 * to `<stateDir>/redis/` and the old folder is removed.
 *
 * A redis-server left running from the old folder (its magpie was killed) is
 * shut down first (SHUTDOWN writes its AOF); one that still has clients (an
 * older magpie still runs) is left alone and the start refused. When the
 * state folder already holds data, the old data is put aside beside it
 * (`<stateDir>/redis-legacy-<time>/`) rather than mixed in or dropped.
 */
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ensurePrivateDir } from '../config/state-dir.js';
import { AppError, ExitCode } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { processRuns } from './pid.js';
import { withQuickConnection } from './redis.js';

export interface MigrateLegacyRedisOptions {
  workspace: string;
  stateDir: string;
  /** Where the data goes: `<stateDir>/redis`. */
  target: string;
  logger: Logger;
  /** How long an orphaned old redis-server may take to exit after SHUTDOWN. @defaultValue 15000 */
  shutdownTimeoutMs?: number;
}

/** What the old layout recorded about its running server (no password then). */
const LEGACY_INFO = 'magpie.json';
/** Files of ours in the new folder that are not Redis data. */
const OWN_FILES = new Set(['password', 'magpie.json']);

/** `<workspace>/.redis`: where the private Redis kept its data before the state folder. */
export function legacyRedisDir(workspace: string): string {
  return path.join(workspace, '.redis');
}

/**
 * Moves `<workspace>/.redis/` into `target` (or aside, see the file header)
 * and removes it. Does nothing when there is no such folder.
 */
export async function migrateLegacyRedis(options: MigrateLegacyRedisOptions): Promise<void> {
  const legacy = legacyRedisDir(options.workspace);
  if (!existsSync(legacy)) return;
  await stopOrphanedServer(legacy, options.shutdownTimeoutMs ?? 15_000);
  const entries = readdirSync(legacy).filter((name) => name !== LEGACY_INFO);
  if (entries.length === 0) {
    rmSync(legacy, { recursive: true, force: true });
    options.logger.info({ removed: legacy }, 'removed the old, empty Redis folder from the workspace');
    return;
  }
  ensurePrivateDir(options.target);
  const targetHasData = readdirSync(options.target).some((name) => !OWN_FILES.has(name));
  const destination = targetHasData
    ? ensurePrivateDir(
        path.join(options.stateDir, `redis-legacy-${new Date().toISOString().replace(/[:.]/g, '-')}`),
      )
    : options.target;
  for (const name of entries) moveEntry(path.join(legacy, name), path.join(destination, name));
  rmSync(legacy, { recursive: true, force: true });
  if (targetHasData) {
    options.logger.warn(
      { from: legacy, keptAt: destination, using: options.target },
      'the state folder already had Redis data: the old workspace copy was moved aside, not merged',
    );
  } else {
    options.logger.info(
      { from: legacy, to: destination },
      'moved the private Redis data out of the workspace',
    );
  }
}

/** Renames `from` to `to`; across file systems, copies to `<to>.partial`, renames, then removes `from`. */
function moveEntry(from: string, to: string): void {
  try {
    renameSync(from, to);
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw migrationError(from, to, err);
  }
  const partial = `${to}.partial`;
  try {
    rmSync(partial, { recursive: true, force: true });
    cpSync(from, partial, { recursive: true, preserveTimestamps: true, errorOnExist: true });
    renameSync(partial, to);
    rmSync(from, { recursive: true, force: true });
  } catch (err) {
    throw migrationError(from, to, err);
  }
}

function migrationError(from: string, to: string, cause: unknown): AppError {
  return new AppError(
    'INTERNAL',
    `cannot move the old Redis data ${from} to ${to}: ${(cause as Error).message}; move it by hand or free the space, then start again`,
    { cause },
  );
}

/**
 * Shuts down a redis-server still serving the old folder when nobody else is
 * connected to it; refuses (exit 3) when someone is.
 */
async function stopOrphanedServer(legacy: string, timeoutMs: number): Promise<void> {
  const info = readLegacyInfo(legacy);
  if (!info || !processRuns(info.pid)) return;
  try {
    await withQuickConnection(info.url, async (redis) => {
      const clients = String(await redis.client('LIST'))
        .split('\n')
        .filter((line) => line.trim() !== '');
      if (clients.length > 1) {
        throw new AppError(
          'REDIS_UNAVAILABLE',
          `an older magpie still uses the redis-server (pid ${info.pid}) in ${legacy}: stop it, then run "magpie start" again (its data then moves out of the workspace)`,
          { exitCode: ExitCode.unavailable },
        );
      }
      // SHUTDOWN writes the AOF and exits; the connection closes without a reply.
      await redis.call('SHUTDOWN').catch(() => undefined);
    });
  } catch (err) {
    if (err instanceof AppError) throw err;
    return; // not answering (a reused pid, or already going): nothing to stop
  }
  const deadline = Date.now() + timeoutMs;
  while (processRuns(info.pid)) {
    if (Date.now() > deadline) {
      throw new AppError(
        'REDIS_UNAVAILABLE',
        `the old redis-server (pid ${info.pid}) in ${legacy} did not stop: stop it, then start again`,
        { exitCode: ExitCode.unavailable },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function readLegacyInfo(legacy: string): { url: string; pid: number } | undefined {
  try {
    const value = JSON.parse(readFileSync(path.join(legacy, LEGACY_INFO), 'utf8')) as unknown;
    const { url, pid } = (value ?? {}) as { url?: unknown; pid?: unknown };
    return typeof url === 'string' && typeof pid === 'number' && Number.isInteger(pid) && pid > 0
      ? { url, pid }
      : undefined;
  } catch {
    return undefined; // missing or unreadable: no server recorded
  }
}
