/**
 * MemoryHistory: every version of memory/MEMORY.md, kept in a bare git
 * repository at `<workspace>/.memory-history` (which the tools may read but
 * not change). A change is recorded as a commit whose author says who made it
 * (a tool's name, `consolidation`, `/forget`, `undo`, or `hand edit` for a
 * change nobody announced) and whose subject says what changed. Commits are
 * made under a file lock, so two workers never interleave; history is only
 * ever added to (undo is a new commit).
 */
import { existsSync, lstatSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { AppError, describeError, ExitCode } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import { MEMORY_HISTORY_DIR } from '../../workspace/workspace-path.js';
import { FileLock } from '../search/file-lock.js';
import { MemoryStore } from '../store.js';
import { Git } from './git.js';
import { changeSummary } from './line-diff.js';

/** The history's folder, at the top of the workspace (a protected folder, see workspace-path.ts). */
export const HISTORY_DIR = MEMORY_HISTORY_DIR;
/** The one file the history keeps, as named in its commits. */
const FILE = 'MEMORY.md';
/** Who a change nobody announced is put down to. */
export const HAND_EDIT = 'hand edit';

/** One recorded change, newest first in {@link MemoryHistory.log}. */
export interface HistoryEntry {
  /** The commit's short id. */
  rev: string;
  at: Date;
  /** Who made the change: a tool's name, `consolidation`, `/forget`, `undo` or `hand edit`. */
  who: string;
  /** One line saying what changed. */
  summary: string;
  /** Lines added and removed. */
  added: number;
  removed: number;
}

export interface MemoryHistoryOptions {
  /** The workspace (absolute or relative). */
  workspace: string;
  /** How long a change waits for another process's change. @defaultValue 60_000 */
  lockTimeoutMs?: number;
  /** Told when recording fails around a tool's change (the change itself goes ahead). @defaultValue silent */
  logger?: Logger;
}

/** What a recorded change was: its short rev, or undefined when MEMORY.md had not changed. */
export type Recorded = string | undefined;

/** The history of one workspace's MEMORY.md. */
export class MemoryHistory {
  readonly gitDir: string;
  readonly store: MemoryStore;
  private readonly git: Git;
  private readonly lock: FileLock;
  private ready: Promise<void> | undefined;
  private readonly logger: Logger | undefined;
  /** MEMORY.md's inode, size and mtime when this process last recorded or looked. */
  private seen: string | undefined;

  constructor(options: MemoryHistoryOptions) {
    const workspace = path.resolve(options.workspace);
    this.gitDir = path.join(workspace, HISTORY_DIR);
    this.git = new Git(this.gitDir);
    this.store = new MemoryStore({ workspace });
    this.logger = options.logger;
    this.lock = new FileLock({
      path: path.join(this.gitDir, 'magpie.lock'),
      timeoutMs: options.lockTimeoutMs ?? 60_000,
    });
  }

  /** Creates the repository when it is missing (idempotent). */
  init(): Promise<void> {
    this.ready ??= (async () => {
      await mkdir(this.gitDir, { recursive: true, mode: 0o700 });
      const head = path.join(this.gitDir, 'HEAD');
      // Under the lock (once per instance): two processes running `git init` at once fight
      // over its config file, and one must not use a repository the other is still making.
      const held = await this.lock.acquire();
      try {
        if (!existsSync(head)) await this.git.out(['init', '--bare', '--quiet', '--initial-branch=main']);
      } finally {
        held.release();
      }
    })().catch((err: unknown) => {
      this.ready = undefined;
      throw err;
    });
    return this.ready;
  }

  /** Runs `fn` holding the history's lock (one change at a time across processes). */
  async locked<T>(fn: () => Promise<T>): Promise<T> {
    await this.init();
    const held = await this.lock.acquire();
    try {
      return await fn();
    } finally {
      held.release();
    }
  }

  /**
   * Records MEMORY.md as it is now, if it differs from the last recorded version.
   * Call it holding the lock ({@link locked}); {@link record} takes it itself.
   */
  async recordLocked(who: string, summary?: string): Promise<Recorded> {
    const seen = this.fingerprint();
    const [now, before] = await Promise.all([this.store.readLongTerm(), this.contentAt('HEAD')]);
    this.seen = seen;
    // Nothing recorded yet and nothing written yet: no version to keep.
    if (now === (before ?? '')) return undefined;
    return this.commit(now, who, summary ?? changeSummary(before ?? '', now, before === undefined));
  }

  /**
   * Records a hand edit if MEMORY.md's inode, size or mtime moved since this process last
   * looked: a stat when nothing changed, so it is cheap enough to call every minute.
   */
  async noticeHandEdit(): Promise<Recorded> {
    if (this.seen !== undefined && this.fingerprint() === this.seen) return undefined;
    return this.record(HAND_EDIT);
  }

  /** MEMORY.md's inode, size and mtime ('missing' when absent). */
  private fingerprint(): string {
    try {
      const st = lstatSync(this.store.longTermPath);
      return `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      // Absent (or unreadable): compared like any other state; the record itself reads it properly.
      return 'missing';
    }
  }

  /** Records MEMORY.md as it is now, if it changed (a hand edit, when `who` is left out). */
  record(who: string = HAND_EDIT, summary?: string): Promise<Recorded> {
    return this.locked(() => this.recordLocked(who, summary));
  }

  /**
   * Runs a change of `who` (a tool) under the lock: a hand edit made before it is
   * recorded first, as a hand edit, then the change as `who`'s.
   */
  async around<T>(who: string, change: () => Promise<T>): Promise<T> {
    if (this.fingerprint() === 'missing' && !existsSync(this.gitDir)) {
      // No memory and no history yet: nothing to record unless this change writes MEMORY.md.
      const result = await change();
      if (this.fingerprint() !== 'missing') await this.safely(who, () => this.record(who));
      return result;
    }
    let held: { release(): void };
    try {
      await this.init();
      held = await this.lock.acquire();
    } catch (err) {
      // The history must not stop a tool: the change goes ahead, and the next record catches it up.
      this.logger?.warn(
        { err: describeError(err), tool: who },
        'memory history unavailable; change not recorded',
      );
      return change();
    }
    try {
      if (this.seen === undefined || this.fingerprint() !== this.seen)
        await this.safely(who, () => this.recordLocked(HAND_EDIT));
      const before = this.fingerprint();
      try {
        return await change();
      } finally {
        if (this.fingerprint() !== before) await this.safely(who, () => this.recordLocked(who));
      }
    } finally {
      held.release();
    }
  }

  private async safely(who: string, step: () => Promise<unknown>): Promise<void> {
    try {
      await step();
    } catch (err) {
      this.logger?.warn({ err: describeError(err), tool: who }, 'recording a memory change failed');
    }
  }

  /** The recorded changes, newest first (at most `limit`). */
  async log(limit = 50): Promise<HistoryEntry[]> {
    await this.init();
    if ((await this.resolveOrUndefined('HEAD')) === undefined) return [];
    const out = await this.git.out([
      'log',
      `--max-count=${limit}`,
      '--format=%x1e%h%x1f%at%x1f%an%x1f%s',
      '--numstat',
      'HEAD',
      '--',
    ]);
    return out
      .split('\x1e')
      .filter((part) => part.trim() !== '')
      .map((part) => {
        const [head = '', ...stats] = part.split('\n');
        const [rev = '', at = '0', who = '', summary = ''] = head.split('\x1f');
        let added = 0;
        let removed = 0;
        for (const line of stats) {
          const [plus, minus] = line.split('\t');
          if (plus !== undefined && minus !== undefined) {
            added += Number(plus) || 0;
            removed += Number(minus) || 0;
          }
        }
        return { rev, at: new Date(Number(at) * 1000), who, summary, added, removed };
      });
  }

  /** The unified diff of `rev` against its parent (the first version against nothing); default the last change. */
  async diff(rev = 'HEAD'): Promise<string> {
    const sha = await this.resolve(rev);
    return this.git.out(['diff-tree', '-p', '--root', '--no-commit-id', '-r', sha, '--']);
  }

  /**
   * Puts MEMORY.md back as it was before `rev`, as a new commit "undo REV".
   * A hand edit made since the last change is recorded first, so it can be undone too.
   *
   * @throws AppError NOT_FOUND (exit 2) for an unknown rev or the first version (nothing before it).
   */
  undo(rev: string): Promise<{ rev: string; before: string; after: string }> {
    return this.locked(async () => {
      await this.recordLocked(HAND_EDIT);
      const sha = await this.resolve(rev);
      const short = sha.slice(0, 7);
      const previous = await this.contentAt(`${sha}~1`);
      if (previous === undefined) {
        throw new AppError(
          'NOT_FOUND',
          `${rev} is the first recorded version of MEMORY.md; there is nothing before it`,
          {
            exitCode: ExitCode.config,
          },
        );
      }
      const before = await this.store.readLongTerm();
      await this.store.writeLongTerm(previous);
      const made = await this.commit(previous, 'undo', `undo ${short}`);
      return { rev: made, before, after: previous };
    });
  }

  /**
   * Writes `text` as MEMORY.md (atomically, confined to the workspace) and records it
   * as `who`'s change, under the lock, a hand edit before it recorded first.
   */
  write(who: string, text: string, summary?: string): Promise<Recorded> {
    return this.locked(async () => {
      await this.recordLocked(HAND_EDIT);
      await this.store.writeLongTerm(text);
      return this.recordLocked(who, summary);
    });
  }

  /** The full commit id of `rev` (hex, `HEAD` or `HEAD~N`). @throws AppError NOT_FOUND (exit 2) when unknown. */
  async resolve(rev: string): Promise<string> {
    await this.init();
    const sha = /^([0-9a-f]{4,40}|HEAD(~\d{1,4})?)$/i.test(rev)
      ? await this.resolveOrUndefined(rev)
      : undefined;
    if (sha === undefined) {
      throw new AppError('NOT_FOUND', `unknown revision "${rev}"; "magpie memory log" lists them`, {
        exitCode: ExitCode.config,
      });
    }
    return sha;
  }

  private async resolveOrUndefined(rev: string): Promise<string | undefined> {
    const result = await this.git.run(['rev-parse', '--verify', '--quiet', `${rev}^{commit}`]);
    return result.code === 0 ? result.stdout.trim() : undefined;
  }

  /** MEMORY.md at `rev`, or undefined when there is no such commit. */
  private async contentAt(rev: string): Promise<string | undefined> {
    await this.init();
    const result = await this.git.run(['cat-file', 'blob', `${rev}:${FILE}`]);
    return result.code === 0 ? result.stdout : undefined;
  }

  /** Commits `text` as MEMORY.md on top of HEAD; returns the new short rev. */
  private async commit(text: string, who: string, summary: string): Promise<string> {
    const blob = (await this.git.out(['hash-object', '-w', '--stdin'], { input: text })).trim();
    const tree = (await this.git.out(['mktree'], { input: `100644 blob ${blob}\t${FILE}\n` })).trim();
    const parent = await this.resolveOrUndefined('HEAD');
    const subject = summary.replace(/[\r\n]+/g, ' ').slice(0, 200);
    const commit = (
      await this.git.out(['commit-tree', tree, ...(parent ? ['-p', parent] : [])], {
        input: `${subject}\n\nby ${who.replace(/[\r\n]+/g, ' ')}\n`,
        author: who,
      })
    ).trim();
    await this.git.out(['update-ref', 'HEAD', commit, parent ?? '']);
    return commit.slice(0, 7);
  }
}
