/**
 * The memory index's SQLite database: Node's built-in `node:sqlite` (SQLite
 * with FTS5, compiled into Node since 22.16 and 24), so it installs without a
 * compiler, a downloaded binary or WebAssembly. Opened for one operation at a
 * time under the index lock (see memory-index.ts), in WAL mode with exclusive
 * locking: one connection at a time needs no shared-memory index (no `-shm`
 * file), and a crash mid-write is rolled back by the next opener (committed
 * frames replayed, the rest dropped; SQLite's POSIX locks die with their
 * process, so nothing is left to clear).
 *
 * The schema: `source` (one row per indexed file, with what was seen of it),
 * `chunk` (a paragraph of a note or one message of a conversation) and
 * `chunk_fts`, an FTS5 index over the chunks (BM25 ranking, Porter stemming,
 * diacritics folded) whose text lives in `chunk`. The indexer writes both
 * (per-row triggers would make a first build six times slower). With an
 * embedding model, `embedding` holds each passage's vector (Float32, length
 * one) keyed by the model and the sha256 of the passage's text (`chunk.hash`),
 * so an unchanged passage is never embedded twice, across restarts too.
 */
import { randomUUID } from 'node:crypto';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { AppError } from '../../errors/index.js';

/** The small database interface this index uses (over node:sqlite's DatabaseSync). */
export interface SqlDatabase {
  exec(sql: string): void;
  run(sql: string, values?: SqlValue[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  all(sql: string, values?: SqlValue[]): Record<string, SqlValue>[];
  get(sql: string, values?: SqlValue[]): Record<string, SqlValue> | null;
  prepare(sql: string): SqlStatement;
  close(): void;
  readonly isOpen: boolean;
  readonly inTransaction: boolean;
}

export interface SqlStatement {
  run(values?: SqlValue[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  get(values?: SqlValue[]): Record<string, SqlValue> | null;
  all(values?: SqlValue[]): Record<string, SqlValue>[];
  /** Lets the statement go (node:sqlite finalizes it when collected or when the database closes). */
  finalize(): void;
}

export type SqlValue = number | bigint | string | Uint8Array | null;

/** Bumped whenever the schema or what goes into a chunk changes: an index of another version is rebuilt. */
export const SCHEMA_VERSION = 2;

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
  body TEXT NOT NULL,
  hash BLOB NOT NULL
);
CREATE INDEX chunk_source ON chunk (source_id);
CREATE INDEX chunk_hash ON chunk (hash);
CREATE TABLE embedding (
  model TEXT NOT NULL,
  hash BLOB NOT NULL,
  vector BLOB NOT NULL,
  PRIMARY KEY (model, hash)
) WITHOUT ROWID;
CREATE INDEX chunk_day ON chunk (day);
CREATE VIRTUAL TABLE chunk_fts USING fts5 (
  body, heading, content = 'chunk', content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
`;

type SqliteModule = typeof import('node:sqlite');

let sqlite: SqliteModule | undefined;

/**
 * node:sqlite, loaded once per process. Node 22 marks it experimental and
 * prints an ExperimentalWarning the first time it loads (Node 24 does not):
 * exactly that warning is dropped, while the module loads (synchronously),
 * and every other warning passes through.
 */
export function loadSqlite(): SqliteModule {
  if (sqlite) return sqlite;
  const emitWarning = process.emitWarning;
  process.emitWarning = function filtered(this: NodeJS.Process, ...args: Parameters<typeof emitWarning>) {
    if (isSqliteExperimentalWarning(args[0], args[1])) return;
    return Reflect.apply(emitWarning, this, args);
  } as typeof emitWarning;
  try {
    sqlite = process.getBuiltinModule('node:sqlite');
  } finally {
    process.emitWarning = emitWarning;
  }
  return sqlite;
}

/** Node 22's warning on loading node:sqlite: `ExperimentalWarning: SQLite is an experimental feature…`. */
export function isSqliteExperimentalWarning(warning: unknown, typeOrOptions: unknown): boolean {
  const type =
    typeof typeOrOptions === 'string'
      ? typeOrOptions
      : typeof typeOrOptions === 'object' && typeOrOptions !== null
        ? (typeOrOptions as { type?: unknown }).type
        : undefined;
  const message = warning instanceof Error ? warning.message : warning;
  return (
    (type === 'ExperimentalWarning' ||
      (warning instanceof Error && warning.name === 'ExperimentalWarning')) &&
    typeof message === 'string' &&
    message.startsWith('SQLite is an experimental feature')
  );
}

/**
 * The values as node:sqlite should bind them: it binds every JavaScript
 * number as REAL, and FTS5 does not treat `rowid = 2.0` as a lookup of row 2
 * (snippet() then reads another row's text), so whole numbers go as INTEGER.
 */
function bind(values: SqlValue[]): SqlValue[] {
  return values.map((v) => (typeof v === 'number' && Number.isSafeInteger(v) ? BigInt(v) : v));
}

/** node:sqlite's DatabaseSync behind the SqlDatabase interface. */
class NodeSqliteDatabase implements SqlDatabase {
  constructor(private readonly db: DatabaseSync) {}

  exec(sql: string): void {
    this.db.exec(sql);
  }

  run(sql: string, values: SqlValue[] = []) {
    return this.db.prepare(sql).run(...bind(values));
  }

  all(sql: string, values: SqlValue[] = []) {
    return this.db.prepare(sql).all(...bind(values)) as Record<string, SqlValue>[];
  }

  get(sql: string, values: SqlValue[] = []) {
    return (this.db.prepare(sql).get(...bind(values)) as Record<string, SqlValue> | undefined) ?? null;
  }

  prepare(sql: string): SqlStatement {
    return new NodeSqliteStatement(this.db.prepare(sql));
  }

  close(): void {
    this.db.close();
  }

  get isOpen(): boolean {
    return this.db.isOpen;
  }

  get inTransaction(): boolean {
    return this.db.isTransaction;
  }
}

class NodeSqliteStatement implements SqlStatement {
  constructor(private readonly statement: StatementSync) {}

  run(values: SqlValue[] = []) {
    return this.statement.run(...bind(values));
  }

  get(values: SqlValue[] = []) {
    return (this.statement.get(...bind(values)) as Record<string, SqlValue> | undefined) ?? null;
  }

  all(values: SqlValue[] = []) {
    return this.statement.all(...bind(values)) as Record<string, SqlValue>[];
  }

  finalize(): void {
    // Nothing to do: node:sqlite has no explicit finalize.
  }
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
export function openIndexDatabase(
  file: string,
  identity: IndexIdentity,
): { db: SqlDatabase; state: 'ready' | 'fresh' | 'mismatch' } {
  const { DatabaseSync } = loadSqlite();
  const db: SqlDatabase = new NodeSqliteDatabase(new DatabaseSync(file));
  try {
    // Exclusive locking before WAL: the one connection keeps the write-ahead log's index in its own
    // memory (no -shm file); the index lock already admits one connection at a time. NORMAL sync
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

/**
 * Whether `err` is SQLite's "database is locked" (SQLITE_BUSY, SQLITE_LOCKED):
 * a program other than magpie (which takes the index lock first) has the file
 * open, so it is in use, not damaged.
 */
export function isDatabaseBusy(err: unknown): boolean {
  const code = (err as { errcode?: unknown } | null)?.errcode;
  return typeof code === 'number' && ((code & 0xff) === 5 || (code & 0xff) === 6);
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
