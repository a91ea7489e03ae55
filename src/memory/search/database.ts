/**
 * The memory index's SQLite database: SQLite 3.53 with FTS5, compiled to
 * WebAssembly (node-sqlite3-wasm), so it installs without a compiler or a
 * downloaded binary. Opened for one operation at a time under the index
 * lock, in WAL mode with exclusive locking: a crash mid-write is rolled back
 * by the next opener (committed frames replayed, the rest dropped), and no
 * shared memory is needed.
 *
 * The schema: `source` (one row per indexed file, with what was seen of it),
 * `chunk` (a paragraph of a note or one message of a conversation) and
 * `chunk_fts`, an FTS5 index over the chunks (BM25 ranking, Porter stemming,
 * diacritics folded) whose text lives in `chunk`. The indexer writes both
 * (per-row triggers would make a first build six times slower).
 */
import { randomUUID } from 'node:crypto';
import v8 from 'node:v8';
import { AppError } from '../../errors/index.js';

/** The parts of node-sqlite3-wasm's Database this index uses. */
export interface SqlDatabase {
  exec(sql: string): void;
  run(sql: string, values?: SqlValue[]): { changes: number; lastInsertRowid: number | bigint };
  all(sql: string, values?: SqlValue[]): Record<string, SqlValue>[];
  get(sql: string, values?: SqlValue[]): Record<string, SqlValue> | null;
  prepare(sql: string): SqlStatement;
  close(): void;
  readonly isOpen: boolean;
  readonly inTransaction: boolean;
}

export interface SqlStatement {
  run(values?: SqlValue[]): { changes: number; lastInsertRowid: number | bigint };
  get(values?: SqlValue[]): Record<string, SqlValue> | null;
  all(values?: SqlValue[]): Record<string, SqlValue>[];
  finalize(): void;
}

export type SqlValue = number | bigint | string | Uint8Array | null;

/** Bumped whenever the schema or what goes into a chunk changes: an index of another version is rebuilt. */
export const SCHEMA_VERSION = 1;

const SCHEMA = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE source (
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  dev INTEGER NOT NULL,
  ino INTEGER NOT NULL,
  size INTEGER NOT NULL,
  mtime_ms REAL NOT NULL,
  read_to INTEGER NOT NULL DEFAULT 0,
  lines INTEGER NOT NULL DEFAULT 0,
  tail TEXT NOT NULL DEFAULT ''
);
CREATE TABLE chunk (
  id INTEGER PRIMARY KEY,
  source_id INTEGER NOT NULL,
  line INTEGER NOT NULL,
  day INTEGER,
  ts INTEGER,
  role TEXT,
  heading TEXT NOT NULL DEFAULT '',
  body TEXT NOT NULL
);
CREATE INDEX chunk_source ON chunk (source_id);
CREATE INDEX chunk_day ON chunk (day);
CREATE VIRTUAL TABLE chunk_fts USING fts5 (
  body, heading, content = 'chunk', content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
`;

interface SqliteModule {
  Database: new (file: string, options?: { fileMustExist?: boolean; readOnly?: boolean }) => SqlDatabase;
}

let loading: Promise<SqliteModule> | undefined;

/**
 * Loads SQLite once per process. V8 compiles its WebAssembly with the
 * baseline compiler only (Liftoff): the optimising tier speeds searches up by
 * a few per cent but keeps ~45 MB more resident in every worker. The flag is
 * process-wide and only concerns WebAssembly compiled from now on.
 */
function loadSqlite(): Promise<SqliteModule> {
  loading ??= (async () => {
    v8.setFlagsFromString('--liftoff-only');
    const mod = (await import('node-sqlite3-wasm')).default as unknown as SqliteModule;
    return mod;
  })();
  return loading;
}

/** What an opened index records about how it was built; a mismatch means a rebuild. */
export interface IndexIdentity {
  /** The workspace's real path. */
  workspace: string;
  /** The time zone the chunks' days were computed in. */
  timezone: string;
}

/**
 * Opens (creating if needed) the index database at `file` for one operation.
 * Returns the database and whether it is usable as it is: `fresh` when it is
 * empty (the caller creates the schema with {@link createSchema} in the
 * transaction of the first sync, so a crash mid-build leaves an empty file),
 * `mismatch` when it was built for another schema, workspace or time zone
 * (the caller rebuilds). Errors from a damaged file propagate (the caller
 * rebuilds).
 */
export async function openIndexDatabase(
  file: string,
  identity: IndexIdentity,
): Promise<{ db: SqlDatabase; state: 'ready' | 'fresh' | 'mismatch' }> {
  const { Database } = await loadSqlite();
  const db = new Database(file);
  try {
    // Exclusive locking before WAL: the write-ahead log then needs no shared memory. NORMAL sync
    // keeps the file consistent through a power cut (a lost last change is found again by the next sync).
    db.exec(
      'PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -2000;',
    );
    const hasMeta = db.get("SELECT 1 AS one FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
    if (!hasMeta) {
      const tables = db.get("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'");
      return { db, state: Number(tables?.n ?? 0) > 0 ? 'mismatch' : 'fresh' };
    }
    const rows = db.all('SELECT key, value FROM meta');
    const meta = new Map(rows.map((r) => [String(r.key), String(r.value)]));
    const same =
      meta.get('schema') === String(SCHEMA_VERSION) &&
      meta.get('workspace') === identity.workspace &&
      meta.get('timezone') === identity.timezone;
    return { db, state: same ? 'ready' : 'mismatch' };
  } catch (err) {
    closeQuietly(db);
    throw err;
  }
}

/** Creates the tables of an empty index, inside the caller's transaction. */
export function createSchema(db: SqlDatabase, identity: IndexIdentity): void {
  db.exec(SCHEMA);
  const insert = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
  try {
    insert.run(['schema', String(SCHEMA_VERSION)]);
    insert.run(['workspace', identity.workspace]);
    insert.run(['timezone', identity.timezone]);
    insert.run(['epoch', randomUUID()]);
    insert.run(['generation', '0']);
  } finally {
    insert.finalize();
  }
}

/**
 * What the index looked like when last changed: a random id given at
 * creation and a counter every change bumps. A process that cached the
 * source table under the same version may use its copy.
 */
export function indexVersion(db: SqlDatabase): string {
  const rows = db.all("SELECT key, value FROM meta WHERE key IN ('epoch', 'generation')");
  const meta = new Map(rows.map((r) => [String(r.key), String(r.value)]));
  return `${meta.get('epoch')}:${meta.get('generation')}`;
}

/** Marks the index as changed (see {@link indexVersion}). */
export function bumpVersion(db: SqlDatabase): void {
  db.run("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'");
}

/**
 * Runs `work` in one transaction: committed when it resolves, rolled back
 * when it throws (and the error rethrown).
 */
export async function inTransaction<T>(db: SqlDatabase, work: () => Promise<T>): Promise<T> {
  db.exec('BEGIN IMMEDIATE');
  try {
    const result = await work();
    db.exec('COMMIT');
    return result;
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw err;
  }
}

/** Closes the database; a failure to close (already broken) is reported as an AppError for the log. */
export function closeDatabase(db: SqlDatabase): void {
  if (!db.isOpen) return;
  try {
    db.close();
  } catch (err) {
    throw new AppError('INTERNAL', `memory index: closing the database failed: ${String(err)}`, {
      cause: err,
    });
  }
}

function closeQuietly(db: SqlDatabase): void {
  try {
    if (db.isOpen) db.close();
  } catch {
    // Already failing: the open error that brought us here is the one to report.
  }
}
