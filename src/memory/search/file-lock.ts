/**
 * A lock file shared by the processes of one machine (workers, `magpie
 * memory`): created with O_CREAT | O_EXCL, holding the owner's pid, host and
 * a random token, its mtime refreshed while held. A lock whose owner died
 * (same host, no such pid) or that was not refreshed for `staleMs` is broken,
 * under a second O_EXCL "break" file, so two waiters never both break it and
 * then both take it.
 */
import { randomBytes } from 'node:crypto';
import type { Stats } from 'node:fs';
import { open, readFile, stat, unlink, utimes } from 'node:fs/promises';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError, CancelledError, ExitCode } from '../../errors/index.js';
import { isMissing } from '../../workspace/cached-file.js';

export interface FileLockOptions {
  /** The lock file's path; its folder must exist. */
  path: string;
  /** A lock not refreshed for this long is taken to be left by a crash. @defaultValue 30_000 */
  staleMs?: number;
  /** How long `acquire` waits for another holder. @defaultValue 60_000 */
  timeoutMs?: number;
  /** How often a waiter looks again. @defaultValue 20 */
  pollMs?: number;
}

/** What a lock file holds. */
interface Owner {
  pid: number;
  host: string;
  token: string;
}

/** A held lock; `release` is safe to call twice. */
export interface HeldLock {
  release(): Promise<void>;
}

/** Cross-process mutual exclusion through one lock file. */
export class FileLock {
  readonly path: string;
  private readonly staleMs: number;
  private readonly timeoutMs: number;
  private readonly pollMs: number;

  constructor(options: FileLockOptions) {
    this.path = options.path;
    this.staleMs = options.staleMs ?? 30_000;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.pollMs = options.pollMs ?? 20;
    for (const [name, value] of Object.entries({
      staleMs: this.staleMs,
      timeoutMs: this.timeoutMs,
      pollMs: this.pollMs,
    })) {
      if (!Number.isFinite(value) || value <= 0) {
        throw new AppError('INTERNAL', `FileLock: ${name} must be a positive number, got ${value}`);
      }
    }
  }

  /**
   * Waits until the lock is free (breaking a stale one) and takes it.
   *
   * @throws AppError TIMEOUT (exit 3) after `timeoutMs`; CancelledError when `signal` aborts.
   */
  async acquire(signal?: AbortSignal): Promise<HeldLock> {
    const deadline = Date.now() + this.timeoutMs;
    const token = randomBytes(12).toString('hex');
    for (;;) {
      if (signal?.aborted) throw new CancelledError();
      if (await this.tryCreate(token)) return this.held(token);
      const holder = await this.inspect();
      if (holder === undefined) continue; // released meanwhile: try again at once
      if (holder.stale) await this.breakStale(holder.id);
      else {
        if (Date.now() > deadline) {
          throw new AppError(
            'TIMEOUT',
            `the memory index is busy (${this.path} held${holder.pid ? ` by process ${holder.pid}` : ''} for over ${Math.round(this.timeoutMs / 1000)} s)`,
            { transient: true, exitCode: ExitCode.unavailable },
          );
        }
        await sleep(this.pollMs, undefined, signal ? { signal } : undefined).catch(() => undefined);
      }
    }
  }

  private async tryCreate(token: string): Promise<boolean> {
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(this.path, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    }
    try {
      const owner: Owner = { pid: process.pid, host: os.hostname(), token };
      await handle.writeFile(JSON.stringify(owner));
    } finally {
      await handle.close();
    }
    return true;
  }

  /**
   * Who holds the lock and whether that holder is gone; undefined when there is no lock now.
   * `id` tells this lock file from a later one (its inode, plus the owner's token once written).
   */
  private async inspect(): Promise<{ stale: boolean; id: string; pid: number | undefined } | undefined> {
    let text: string;
    let info: Stats;
    try {
      [text, info] = await Promise.all([readFile(this.path, 'utf8'), stat(this.path)]);
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
    const owner = parseOwner(text);
    const old = Date.now() - info.mtimeMs > this.staleMs;
    // An owner not written yet (created a moment ago) is only stale by age.
    const dead = owner !== undefined && owner.host === os.hostname() && !isAlive(owner.pid);
    return { stale: old || dead, id: `${info.ino}:${owner?.token ?? ''}`, pid: owner?.pid };
  }

  /** Removes the lock if it is still the stale one seen (`id`), holding the break file meanwhile. */
  private async breakStale(id: string): Promise<void> {
    const breakPath = `${this.path}.break`;
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(breakPath, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // Another waiter is breaking it; a break file left by a crash is itself stale after staleMs.
      const since = await stat(breakPath).then(
        (st) => Date.now() - st.mtimeMs,
        (statErr: unknown) => {
          if (isMissing(statErr)) return 0;
          throw statErr;
        },
      );
      if (since > this.staleMs) await unlinkIfPresent(breakPath);
      else await sleep(this.pollMs);
      return;
    }
    await handle.close();
    try {
      // Judged again under the break file: a lock taken since then is another file, or fresh.
      const now = await this.inspect();
      if (now?.stale && now.id === id) await unlinkIfPresent(this.path);
    } finally {
      await unlinkIfPresent(breakPath);
    }
  }

  private held(token: string): HeldLock {
    const refreshMs = Math.max(1, Math.floor(this.staleMs / 3));
    const timer = setInterval(() => {
      const now = new Date();
      utimes(this.path, now, now).catch(() => undefined); // gone or replaced: release() finds out
    }, refreshMs);
    timer.unref();
    let released: Promise<void> | undefined;
    return {
      release: () => {
        released ??= (async () => {
          clearInterval(timer);
          const current = await readFile(this.path, 'utf8').then(parseOwner, (err: unknown) => {
            if (isMissing(err)) return undefined;
            throw err;
          });
          if (current?.token === token) await unlinkIfPresent(this.path);
        })();
        return released;
      },
    };
  }
}

function parseOwner(text: string): Owner | undefined {
  try {
    const value = JSON.parse(text) as Partial<Owner>;
    if (typeof value.pid === 'number' && typeof value.host === 'string' && typeof value.token === 'string') {
      return { pid: value.pid, host: value.host, token: value.token };
    }
    return undefined;
  } catch {
    // Half-written (its owner is between create and write) or garbage: judged by age alone.
    return undefined;
  }
}

/** True when a process with this pid exists (EPERM: it exists but belongs to someone else). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function unlinkIfPresent(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
}
