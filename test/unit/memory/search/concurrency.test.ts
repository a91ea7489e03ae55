/**
 * The index shared by several processes: two real child processes writing
 * notes and logs and updating or searching the index at once leave it whole
 * (every word found exactly where it was written, SQLite's and FTS5's
 * integrity checks pass), and a process killed in the middle of a rebuild
 * leaves neither a lock that blocks others nor a half-written index.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeDatabase, openIndexDatabase } from '../../../../src/memory/search/database.js';
import { waitFor } from '../../../fakes/wait-for.js';
import { appendSession, line, type TempSpace, TZ, tempSpace, writeNote } from './fixtures.js';

const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'index-process.ts');

let space: TempSpace;
const children: ChildProcess[] = [];
beforeEach(() => {
  space = tempSpace();
});
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  space.cleanup();
});

function start(args: string[]): { child: ChildProcess; done: Promise<{ code: number | null; out: string }> } {
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  child.stderr!.on('data', (d) => {
    out += d;
  });
  const done = new Promise<{ code: number | null; out: string }>((resolve) => {
    child.on('close', (code) => resolve({ code, out }));
  });
  return { child, done };
}

/** SQLite's integrity check and FTS5's, on the index as another process left it. */
async function integrity(dbPath: string): Promise<string> {
  const { db, state } = await openIndexDatabase(dbPath, { workspace: space.ws, timezone: TZ });
  try {
    expect(state).toBe('ready');
    db.run("INSERT INTO chunk_fts (chunk_fts, rank) VALUES ('integrity-check', 1)");
    return String(db.get('PRAGMA integrity_check')?.integrity_check);
  } finally {
    closeDatabase(db);
  }
}

/** A workspace big enough that a rebuild takes a while. */
function fill(notes: number, sessions: number): void {
  for (let n = 0; n < notes; n++) {
    const date = new Date(Date.UTC(2022, 0, 1) + n * 86_400_000).toISOString().slice(0, 10);
    writeNote(
      space.ws,
      date,
      Array.from({ length: 20 }, (_, l) => `- note ${n} line ${l} about the garden and the car`),
    );
  }
  for (let s = 0; s < sessions; s++) {
    appendSession(
      space.ws,
      `cli_s${s}`,
      Array.from({ length: 200 }, (_, m) =>
        line(m % 2 ? 'assistant' : 'user', `message ${m} of chat ${s} about trains`, '2023-01-01T10:00:00Z'),
      ),
    );
  }
}

describe('two processes sharing the index', () => {
  it('updating and searching at once leave it whole: every word found once where written', async () => {
    fill(40, 4);
    const rounds = 24;
    const a = start(['churn', space.ws, space.state, 'alpha', String(rounds)]);
    const b = start(['churn', space.ws, space.state, 'bravo', String(rounds)]);
    const [ra, rb] = await Promise.all([a.done, b.done]);
    expect(ra).toEqual({ code: 0, out: 'done\n' });
    expect(rb).toEqual({ code: 0, out: 'done\n' });

    const index = space.index();
    expect(await index.update()).toMatchObject({ rebuilt: false });
    for (const tag of ['alpha', 'bravo']) {
      for (let i = 0; i < rounds; i++) {
        const hits = (await index.search(`${tag}w${i}`)).hits;
        expect(hits.map((h) => h.path).sort(), `${tag}w${i}`).toEqual([
          `memory/202406/202406${String((i % 5) + 1).padStart(2, '0')}.md`,
          `sessions/cli_${tag}.jsonl`,
        ]);
      }
    }
    expect(await integrity(index.dbPath)).toBe('ok');
  }, 120_000);

  it('a process killed mid-rebuild leaves no blocking lock and no half-written index', async () => {
    fill(400, 20);
    const index = space.index();
    await index.update();
    writeNote(space.ws, '2030-01-01', ['- committed before the crash: walrus']);
    const lockFile = path.join(index.dir, 'index.lock');
    const wal = `${index.dbPath}-wal`;
    const killed = start(['rebuild', space.ws, space.state]);
    // Kill it once it holds the lock and has begun writing the new index.
    await waitFor(
      () => {
        if (!existsSync(lockFile) || !existsSync(wal)) return false;
        const owner = readFileSync(lockFile, 'utf8');
        return owner.includes(`"pid":${killed.child.pid}`) && statSync(wal).size > 0;
      },
      30_000,
      'the rebuilding process to hold the lock and write',
      2,
    );
    killed.child.kill('SIGKILL');
    expect((await killed.done).code).toBe(null);
    expect(existsSync(lockFile)).toBe(true); // left behind by the dead process

    const started = Date.now();
    const result = await space.index({ staleLockMs: 60_000 }).search('walrus');
    expect(Date.now() - started).toBeLessThan(20_000); // the dead owner's lock was broken, not waited out
    expect(result.hits.map((h) => h.date)).toEqual(['2030-01-01']);
    expect((await space.index().update()).notes).toBe(401);
    expect(await integrity(index.dbPath)).toBe('ok');
  }, 120_000);
});
