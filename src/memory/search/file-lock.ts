/**
 * A lock file shared by the processes of one machine (workers, `magpie
 * memory`): created with O_CREAT | O_EXCL, holding the owner's pid, host and
 * a random token, its mtime refreshed while held. A lock whose owner died
 * (same host, no such pid) or that was not refreshed for `staleMs` is broken,
 * under a second O_EXCL "break" file, so two waiters never both break it and
 * then both take it. The file operations are synchronous (microseconds each,
 * no thread-pool round trip per search); only waiting is asynchronous.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  openSync,
  readFileSync,
  type Stats,
  statSync,
  unlinkSync,
  utimesSync,
  writeSync,
} from 'node:fs';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError, CancelledError, ExitCode } from '../../errors/index.js';
import { pidExists } from '../../lifecycle/pid-exists.js';
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
  release(): void;
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
      if (this.tryCreate(token)) return this.held(token);
      const holder = this.inspect();
      if (holder === undefined) continue; // released meanwhile: try again at once
      if (holder.stale && this.breakStale(holder.id)) continue;
      if (Date.now() > deadline) {
        throw new AppError(
          'TIMEOUT',
          `the memory index is busy (${this.path} held${holder.pid ? ` by process ${holder.pid}` : ''} for over ${Math.round(this.timeoutMs / 1000)} s)`,
          { transient: true, exitCode: ExitCode.unavailable },
        );
      }
      // An abort ends the wait early; the loop's first line turns it into CancelledError.
      await sleep(this.pollMs, undefined, signal ? { signal } : undefined).catch(() => undefined);
    }
  }

  private tryCreate(token: string): boolean {
    let fd: number;
    try {
      fd = openSync(this.path, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    }
    try {
      const owner: Owner = { pid: process.pid, host: os.hostname(), token };
      writeSync(fd, JSON.stringify(owner));
    } finally {
      closeSync(fd);
    }
    return true;
  }

  /**
   * Who holds the lock and whether that holder is gone; undefined when there is no lock now.
   * `id` tells this lock file from a later one (its inode, plus the owner's token once written).
   */
  private inspect(): { stale: boolean; id: string; pid: number | undefined } | undefined {
    let text: string;
    let info: Stats;
    try {
      info = statSync(this.path);
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
    const owner = parseOwner(text);
    const old = Date.now() - info.mtimeMs > this.staleMs;
    // An owner not written yet (created a moment ago) is only stale by age.
    const dead = owner !== undefined && owner.host === os.hostname() && !pidExists(owner.pid);
    return { stale: old || dead, id: `${info.ino}:${owner?.token ?? ''}`, pid: owner?.pid };
  }

  /**
   * Removes the lock if it is still the stale one seen (`id`), holding the
   * break file meanwhile. Returns false when another waiter is breaking it.
   */
  private breakStale(id: string): boolean {
    const breakPath = `${this.path}.break`;
    let fd: number;
    try {
      fd = openSync(breakPath, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // A break file left by a crash is itself stale after staleMs.
      const since = ageOf(breakPath);
      if (since !== undefined && since > this.staleMs) unlinkIfPresent(breakPath);
      return false;
    }
    closeSync(fd);
    try {
      // Judged again under the break file: a lock taken since then is another file, or fresh.
      const now = this.inspect();
      if (now?.stale && now.id === id) unlinkIfPresent(this.path);
    } finally {
      unlinkIfPresent(breakPath);
    }
    return true;
  }

  private held(token: string): HeldLock {
    const refreshMs = Math.max(1, Math.floor(this.staleMs / 3));
    const timer = setInterval(() => {
      const now = new Date();
      try {
        utimesSync(this.path, now, now);
      } catch {
        // Gone or replaced (taken as stale): release() sees that the file is not ours.
      }
    }, refreshMs);
    timer.unref();
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        clearInterval(timer);
        let current: Owner | undefined;
        try {
          current = parseOwner(readFileSync(this.path, 'utf8'));
        } catch (err) {
          if (isMissing(err)) return;
          throw err;
        }
        if (current?.token === token) unlinkIfPresent(this.path);
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

/** Milliseconds since a file was last modified, or undefined when it is gone. */
function ageOf(file: string): number | undefined {
  try {
    return Date.now() - statSync(file).mtimeMs;
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
}

function unlinkIfPresent(file: string): void {
  try {
    unlinkSync(file);
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
}
