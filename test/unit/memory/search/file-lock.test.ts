/**
 * The index lock file: one holder at a time, waiters served after release,
 * a lock left by a dead process or not refreshed in time broken, a live
 * holder's lock (refreshed while held) never broken, time limits, aborts,
 * and a release that never removes someone else's lock.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CancelledError } from '../../../../src/errors/index.js';
import { FileLock } from '../../../../src/memory/search/file-lock.js';

let dir: string;
let lockPath: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-lock-'));
  lockPath = path.join(dir, 'index.lock');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '']);
  return child.pid!;
}

describe('FileLock', () => {
  it('lets one holder in at a time and serves the waiter after release', async () => {
    const order: string[] = [];
    const first = await new FileLock({ path: lockPath }).acquire();
    order.push('first in');
    const waiting = new FileLock({ path: lockPath, pollMs: 5 }).acquire().then((held) => {
      order.push('second in');
      return held;
    });
    // A third waiter polling as often gives up after ~10 tries: by then the second had as many
    // tries and got nothing either.
    await expect(new FileLock({ path: lockPath, pollMs: 5, timeoutMs: 50 }).acquire()).rejects.toMatchObject({
      code: 'TIMEOUT',
    });
    expect(order).toEqual(['first in']);
    expect(JSON.parse(readFileSync(lockPath, 'utf8'))).toMatchObject({
      pid: process.pid,
      host: os.hostname(),
    });
    order.push('first out');
    first.release();
    const second = await waiting;
    expect(order).toEqual(['first in', 'first out', 'second in']);
    second.release();
    expect(() => statSync(lockPath)).toThrow();
  });

  it('breaks a lock whose owner process is dead', async () => {
    writeFileSync(lockPath, JSON.stringify({ pid: deadPid(), host: os.hostname(), token: 'crashed' }));
    const started = Date.now();
    const held = await new FileLock({ path: lockPath, staleMs: 60_000, timeoutMs: 5_000 }).acquire();
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(JSON.parse(readFileSync(lockPath, 'utf8')).pid).toBe(process.pid);
    held.release();
  });

  it('breaks a lock of another host, or a half-written one, once it is older than staleMs', async () => {
    for (const content of [JSON.stringify({ pid: 1, host: 'elsewhere', token: 't' }), '{"pid":']) {
      writeFileSync(lockPath, content);
      const old = new Date(Date.now() - 10_000);
      utimesSync(lockPath, old, old);
      const held = await new FileLock({ path: lockPath, staleMs: 1_000, timeoutMs: 5_000 }).acquire();
      held.release();
    }
  });

  it('never breaks the lock of a live holder, which refreshes it while held', async () => {
    const holder = await new FileLock({ path: lockPath, staleMs: 400 }).acquire();
    const waiter = new FileLock({ path: lockPath, staleMs: 400, timeoutMs: 1_500, pollMs: 10 });
    await expect(waiter.acquire()).rejects.toMatchObject({ code: 'TIMEOUT', exitCode: 3 });
    expect(Date.now() - statSync(lockPath).mtimeMs).toBeLessThan(400);
    holder.release();
  });

  it('gives up after timeoutMs with TIMEOUT, and stops waiting at once when aborted', async () => {
    writeFileSync(lockPath, JSON.stringify({ pid: process.pid, host: os.hostname(), token: 'busy' }));
    await expect(new FileLock({ path: lockPath, timeoutMs: 100 }).acquire()).rejects.toMatchObject({
      code: 'TIMEOUT',
    });
    const controller = new AbortController();
    const waiting = new FileLock({ path: lockPath, timeoutMs: 60_000, pollMs: 1_000 }).acquire(
      controller.signal,
    );
    setTimeout(() => controller.abort(), 20);
    const started = Date.now();
    await expect(waiting).rejects.toBeInstanceOf(CancelledError);
    expect(Date.now() - started).toBeLessThan(900);
  });

  it('does not remove a lock that is no longer its own on release', async () => {
    const held = await new FileLock({ path: lockPath }).acquire();
    const theirs = JSON.stringify({ pid: process.pid, host: os.hostname(), token: 'someone-else' });
    writeFileSync(lockPath, theirs);
    held.release();
    expect(readFileSync(lockPath, 'utf8')).toBe(theirs);
  });

  it('rejects nonsense options', () => {
    expect(() => new FileLock({ path: lockPath, staleMs: 0 })).toThrow(/staleMs/);
    expect(() => new FileLock({ path: lockPath, timeoutMs: Number.NaN })).toThrow(/timeoutMs/);
  });
});
