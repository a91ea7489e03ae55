/**
 * MemoryIndex: ranked full-text search over MEMORY.md, every daily note and
 * every conversation of one workspace, kept in `<stateDir>/memory-index/`
 * (outside the workspace, so no tool can edit it).
 *
 * Every operation takes the index lock (shared by all processes of the
 * machine), brings the index up to date with the files (only what changed),
 * does its work and lets go, so a note written a moment ago is found and
 * two workers never write at once. A missing index is built; one that is
 * damaged, or was built for another schema, workspace or time zone, is
 * deleted and rebuilt.
 *
 * With an embedder the search is hybrid: keyword (BM25) and vector
 * (cosine) rankings fused (see meaning.ts and vectors.ts); passages without
 * a vector are embedded after each search, in the background.
 */
import { mkdirSync, realpathSync, rmSync } from 'node:fs';
import path from 'node:path';
import { AppError, ExitCode } from '../../errors/index.js';
import { type Logger, secretSpellings, silentLogger } from '../../log/index.js';
import type { Embedder } from '../../providers/embedder.js';
import {
  bumpVersion,
  closeDatabase,
  createSchema,
  indexVersion,
  inTransaction,
  isDatabaseBusy,
  openIndexDatabase,
  type SqlDatabase,
} from './database.js';
import { LocalClock } from './dates.js';
import { FileLock } from './file-lock.js';
import { loadSources, type SourceTable, type SyncStats, syncIndex } from './indexer.js';
import { type EmbedFigures, MeaningSearch, type QueryMeaning } from './meaning.js';
import { toMatchExpressions } from './query.js';
import {
  indexedFiles,
  NO_EMBEDDING_MODEL,
  runSearch,
  type SearchOptions,
  type SearchResult,
} from './search.js';
import { scanSources } from './sources.js';

export type { SyncStats } from './indexer.js';
export type { EmbedFigures } from './meaning.js';
export type { MemoryHit, SearchOptions, SearchResult } from './search.js';

export interface MemoryIndexOptions {
  /** The workspace whose memory and sessions are indexed. */
  workspace: string;
  /** magpie's own data folder (Config.stateDir); the index lives in `<stateDir>/memory-index`. */
  stateDir: string;
  /** IANA time zone that decides which day a message belongs to. @defaultValue the system's time zone */
  timezone?: string;
  /** Rebuilds and damaged indexes are logged here. @defaultValue a silent logger */
  logger?: Logger;
  /** How long an operation waits for another process holding the index. @defaultValue 60_000 */
  lockTimeoutMs?: number;
  /** A lock not refreshed for this long was left by a crash and is broken. @defaultValue 30_000 */
  staleLockMs?: number;
  /**
   * Values never to show (API keys, tokens): a passage holding one is shown
   * redacted instead of as a snippet that might cut through it. @defaultValue []
   */
  secrets?: Iterable<string | undefined>;
  /** Vectors for search by meaning (MAGPIE_EMBEDDING_MODEL); unset: keyword search only. */
  embedder?: Embedder;
  /** How long a search waits for its query's vector. @defaultValue 2_000 */
  queryTimeoutMs?: number;
  /** Embed passages that have no vector after each search (off for one-shot commands). @defaultValue true */
  embedAfterSearch?: boolean;
}

/** Figures about the index, for `magpie memory` and the benchmark. */
export interface IndexFigures extends SyncStats {
  /** Files indexed, by kind. */
  notes: number;
  sessions: number;
  longTerm: boolean;
  /** Chunks in the index. */
  totalChunks: number;
  /** Whether the index was built from nothing by this operation. */
  rebuilt: boolean;
}

/** What an operation does with the synced index. */
type Use<T> = (db: SqlDatabase, stats: SyncStats, rebuilt: boolean) => T | Promise<T>;

/** The database files SQLite may leave beside the index. */
const DB_SIDE_FILES = ['', '-wal', '-shm', '-journal'];

/** The memory search index of one workspace. */
export class MemoryIndex {
  readonly workspace: string;
  /** `<stateDir>/memory-index` */
  readonly dir: string;
  readonly dbPath: string;
  private readonly clock: LocalClock;
  private readonly logger: Logger;
  private readonly secrets: readonly string[];
  private readonly lock: FileLock;
  private chain: Promise<unknown> = Promise.resolve();
  /** The source table as of the last sync, with the index version it belongs to. */
  private sources: { version: string; table: SourceTable } | undefined;
  private readonly meaning: MeaningSearch | undefined;
  private readonly embedAfterSearch: boolean;

  /** @throws RangeError for an unknown time zone. */
  constructor(options: MemoryIndexOptions) {
    this.workspace = path.resolve(options.workspace);
    this.dir = path.join(path.resolve(options.stateDir), 'memory-index');
    this.dbPath = path.join(this.dir, 'index.db');
    this.clock = new LocalClock(options.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone);
    this.logger = options.logger ?? silentLogger();
    this.secrets = secretSpellings(options.secrets ?? []);
    this.meaning = options.embedder
      ? new MeaningSearch({
          embedder: options.embedder,
          logger: this.logger,
          secrets: this.secrets,
          ...(options.queryTimeoutMs !== undefined ? { queryTimeoutMs: options.queryTimeoutMs } : {}),
        })
      : undefined;
    this.embedAfterSearch = options.embedAfterSearch ?? true;
    this.lock = new FileLock({
      path: path.join(this.dir, 'index.lock'),
      timeoutMs: options.lockTimeoutMs ?? 60_000,
      staleMs: options.staleLockMs ?? 30_000,
    });
  }

  /**
   * Brings the index up to date, then searches it.
   *
   * @throws AppError TIMEOUT when another process holds the index too long; CancelledError on abort;
   *   TOOL_FAILED for a query without words or bad options.
   * @example
   * const { hits } = await index.search('Marta Coimbra', { since: 20250101 });
   */
  async search(query: string, options: SearchOptions = {}): Promise<SearchResult> {
    const { meaning } = this;
    // The query's vector is asked for while the index is synced (a query without words is refused first).
    const asked: Promise<QueryMeaning> =
      toMatchExpressions(query) === undefined
        ? Promise.resolve({ keywordOnly: 'the query has no words' })
        : meaning
          ? meaning.query(query, options.signal)
          : Promise.resolve({ keywordOnly: NO_EMBEDDING_MODEL });
    asked.catch(() => undefined); // an abort is reported by the index operation below
    const result = await this.withIndex(options.signal, false, async (db) => {
      const q = await asked;
      const context = {
        clock: this.clock,
        secrets: this.secrets,
        ...(meaning && 'vector' in q ? { meaning: { model: meaning.model, vector: q.vector } } : {}),
      };
      const found = runSearch(db, context, query, options);
      return 'keywordOnly' in q ? { ...found, keywordOnly: q.keywordOnly } : found;
    });
    if (meaning && this.embedAfterSearch) meaning.embedInBackground(this.runner);
    return result;
  }

  /**
   * Embeds every passage that has no vector yet (nothing without an embedder).
   * Stops at the first failed call; the figures say why.
   */
  embedPending(signal?: AbortSignal): Promise<EmbedFigures> {
    if (!this.meaning) return Promise.resolve({ embedded: 0, calls: 0, pending: 0 });
    return this.meaning.embedPending(this.runner, signal);
  }

  /** Resolves when a background embedding pass (if one runs) has ended: for tests and shutdown. */
  async settled(): Promise<void> {
    await this.meaning?.settled();
  }

  /** An operation on the synced index, for the embedding passes. */
  private readonly runner = <T>(signal: AbortSignal | undefined, use: (db: SqlDatabase) => T) =>
    this.withIndex(signal, false, (db) => use(db));

  /** Brings the index up to date with the files and returns what that took. */
  update(signal?: AbortSignal): Promise<IndexFigures> {
    return this.withIndex(signal, false, figures);
  }

  /** Deletes the index and builds it again from every file. */
  reindex(signal?: AbortSignal): Promise<IndexFigures> {
    return this.withIndex(signal, true, figures);
  }

  /**
   * Runs one operation at a time in this process, each under the cross-process lock. SQLite's own
   * locks would not do: a sync's write transaction spans awaited file reads, SQLite waits for a lock
   * by blocking the thread (the event loop), and a rebuild deletes files no other process may have open.
   */
  private withIndex<T>(signal: AbortSignal | undefined, rebuild: boolean, use: Use<T>): Promise<T> {
    const run = this.chain.then(async () => {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      const held = await this.lock.acquire(signal);
      try {
        return await this.openSynced(rebuild, use);
      } finally {
        held.release();
      }
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Opens the index (building it when needed), syncs it, runs `use`; a damaged index is rebuilt once. */
  private async openSynced<T>(rebuild: boolean, use: Use<T>): Promise<T> {
    try {
      return await this.attempt(rebuild, use);
    } catch (err) {
      if (err instanceof AppError) throw err;
      // Another program (a sqlite3 shell) has the file open: deleting it under that program would lose its view.
      if (isDatabaseBusy(err)) throw busy(this.dbPath, err);
      this.logger.warn({ err, index: this.dbPath }, 'memory index unusable: rebuilding it');
      try {
        return await this.attempt(true, use);
      } catch (again) {
        if (again instanceof AppError) throw again;
        if (isDatabaseBusy(again)) throw busy(this.dbPath, again);
        throw new AppError(
          'INTERNAL',
          `the memory index at ${this.dbPath} cannot be built: ${String(again)}`,
          {
            cause: again,
          },
        );
      }
    }
  }

  private async attempt<T>(rebuild: boolean, use: Use<T>): Promise<T> {
    if (rebuild) this.deleteFiles();
    const workspace = realpathSync(this.workspace);
    const identity = { workspace, timezone: this.clock.timezone };
    let { db, state } = openIndexDatabase(this.dbPath, identity);
    if (state === 'mismatch') {
      closeDatabase(db);
      this.logger.info(
        { index: this.dbPath },
        'memory index was built for another version, workspace or time zone: rebuilding',
      );
      this.deleteFiles();
      ({ db, state } = openIndexDatabase(this.dbPath, identity));
    }
    try {
      const fresh = state === 'fresh';
      const stats = await inTransaction(db, async () => {
        if (fresh) createSchema(db, identity);
        const version = indexVersion(db);
        // The source table is cached between operations; another process's change bumps the version.
        const sources = this.sources?.version === version ? this.sources.table : loadSources(db);
        this.sources = undefined;
        const synced = await syncIndex(db, workspace, scanSources(workspace), this.clock, sources, fresh);
        const changed = synced.read > 0 || synced.removed > 0 || fresh;
        if (changed) bumpVersion(db);
        return { synced, sources, version: changed ? indexVersion(db) : version };
      });
      this.sources = { version: stats.version, table: stats.sources };
      return await use(db, stats.synced, fresh);
    } finally {
      closeDatabase(db);
    }
  }

  private deleteFiles(): void {
    this.sources = undefined;
    for (const suffix of DB_SIDE_FILES) rmSync(`${this.dbPath}${suffix}`, { force: true });
  }
}

function busy(dbPath: string, cause: unknown): AppError {
  return new AppError('TIMEOUT', `the memory index is busy (${dbPath} is locked by another program)`, {
    cause,
    transient: true,
    exitCode: ExitCode.unavailable,
  });
}

function figures(db: SqlDatabase, stats: SyncStats, rebuilt: boolean): IndexFigures {
  const chunks = db.get('SELECT count(*) AS n FROM chunk');
  return { ...stats, ...indexedFiles(db), totalChunks: Number(chunks?.n ?? 0), rebuilt };
}
