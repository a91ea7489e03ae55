/**
 * Brings the index up to date with the files: only what changed since the
 * last sync is read. A note whose size, mtime or inode changed is read again
 * whole (notes are small); a session log, which is only appended to, is read
 * from where the last sync stopped (the end of its last complete line), after
 * checking that the bytes before that point are still the ones seen. A log
 * renamed by /new keeps its chunks under the new name (same inode); a file
 * that went away takes its chunks with it.
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { ChunkWriter } from './chunk-writer.js';
import { type Chunk, noteChunks } from './chunks.js';
import type { SqlDatabase } from './database.js';
import type { LocalClock } from './dates.js';
import { continuesFrom, readLogLines } from './session-log.js';
import { openSource, readRange, type ScannedFile } from './sources.js';

/** What one sync changed. */
export interface SyncStats {
  /** Files read (whole or their new part). */
  read: number;
  /** Files whose chunks were dropped because they went away. */
  removed: number;
  /** Chunks added. */
  chunks: number;
}

/** A note (or MEMORY.md) larger than this is indexed up to here. */
const MAX_NOTE_BYTES = 4 * 1024 * 1024;
/** The event loop gets a turn at least this often during a long sync. */
const YIELD_EVERY_MS = 50;

/** A row of the `source` table: a file and what the index has read of it. */
export interface IndexedSource {
  id: number;
  path: string;
  kind: string;
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  /** Bytes read so far (session logs: the end of the last complete line). */
  readTo: number;
  /** Lines read so far (session logs). */
  lines: number;
  /** The bytes just before `readTo`, base64, to notice a rewritten log. */
  tail: string;
}

/** Every indexed file by path: what a sync starts from and leaves up to date. */
export type SourceTable = Map<string, IndexedSource>;

const sameFile = (row: IndexedSource, file: ScannedFile) => row.dev === file.dev && row.ino === file.ino;
const inodeKey = (dev: number, ino: number) => `${dev}:${ino}`;

/** The `source` table as it is in the database. */
export function loadSources(db: SqlDatabase): SourceTable {
  const rows = db.all('SELECT id, path, kind, dev, ino, size, mtime_ms, read_to, lines, tail FROM source');
  return new Map(
    rows.map((r) => [
      String(r.path),
      {
        id: Number(r.id),
        path: String(r.path),
        kind: String(r.kind),
        dev: Number(r.dev),
        ino: Number(r.ino),
        size: Number(r.size),
        mtimeMs: Number(r.mtime_ms),
        readTo: Number(r.read_to),
        lines: Number(r.lines),
        tail: String(r.tail),
      },
    ]),
  );
}

/**
 * Syncs the index in `db` (inside the caller's transaction) with `scanned`,
 * the files found in `workspace` (a real path) just now. `sources` is the
 * source table as the database holds it; it is updated in place to match.
 * `fresh`: the index is empty (built from nothing, its text indexed in bulk).
 */
export async function syncIndex(
  db: SqlDatabase,
  workspace: string,
  scanned: ScannedFile[],
  clock: LocalClock,
  sources: SourceTable,
  fresh = false,
): Promise<SyncStats> {
  const stats: SyncStats = { read: 0, removed: 0, chunks: 0 };
  const writer = new ChunkWriter(db, fresh && sources.size === 0);
  try {
    const scannedByPath = new Map(scanned.map((f) => [f.rel, f]));
    stats.removed += followRenames(db, writer, scanned, sources, scannedByPath);
    let lastYield = Date.now();
    for (const file of scanned) {
      let row = sources.get(file.rel);
      if (row && sameFile(row, file) && row.size === file.size && row.mtimeMs === file.mtimeMs) continue;
      const appendOnly = row !== undefined && sameFile(row, file) && file.kind === 'session';
      if (row && !appendOnly) {
        writer.dropAll(row.id);
        Object.assign(row, { dev: file.dev, ino: file.ino, readTo: 0, lines: 0, tail: '' });
      }
      if (!row) {
        const id = db.run(
          'INSERT INTO source (path, kind, dev, ino, size, mtime_ms) VALUES (?, ?, ?, ?, ?, ?)',
          [file.rel, file.kind, file.dev, file.ino, -1, -1],
        ).lastInsertRowid;
        row = {
          id: Number(id),
          path: file.rel,
          kind: file.kind,
          dev: file.dev,
          ino: file.ino,
          size: -1,
          mtimeMs: -1,
          readTo: 0,
          lines: 0,
          tail: '',
        };
        sources.set(file.rel, row);
      }
      stats.chunks += await readSource(db, writer, workspace, file, row, clock);
      stats.read += 1;
      if (Date.now() - lastYield > YIELD_EVERY_MS) {
        await yieldToLoop();
        lastYield = Date.now();
      }
    }
    for (const [rel, row] of sources) {
      if (scannedByPath.has(rel)) continue;
      writer.dropAll(row.id);
      db.run('DELETE FROM source WHERE id = ?', [row.id]);
      sources.delete(rel);
      stats.removed += 1;
    }
    writer.finish();
  } finally {
    writer.close();
  }
  return stats;
}

/**
 * A session log that now lives under another name (the same inode, its old
 * name gone or holding another file) keeps its row: /new renames the live
 * log, and re-reading it whole would waste the work already done. Returns
 * how many rows were dropped to make room (a stale file under the new name).
 */
function followRenames(
  db: SqlDatabase,
  writer: ChunkWriter,
  scanned: ScannedFile[],
  sources: SourceTable,
  scannedByPath: Map<string, ScannedFile>,
): number {
  let dropped = 0;
  let byInode: Map<string, IndexedSource> | undefined; // built only when a log is new or replaced
  for (const file of scanned) {
    if (file.kind !== 'session') continue;
    const occupant = sources.get(file.rel);
    if (occupant && sameFile(occupant, file)) continue;
    byInode ??= new Map(
      [...sources.values()].filter((r) => r.kind === 'session').map((r) => [inodeKey(r.dev, r.ino), r]),
    );
    const moved = byInode.get(inodeKey(file.dev, file.ino));
    if (!moved || moved.path === file.rel || sources.get(moved.path) !== moved) continue;
    const atOldName = scannedByPath.get(moved.path);
    if (atOldName && sameFile(moved, atOldName)) continue; // a hard link; never indexed anyway
    if (occupant) {
      writer.dropAll(occupant.id);
      db.run('DELETE FROM source WHERE id = ?', [occupant.id]);
      dropped += 1;
    }
    db.run('UPDATE source SET path = ? WHERE id = ?', [file.rel, moved.id]);
    sources.delete(moved.path);
    moved.path = file.rel;
    sources.set(file.rel, moved);
  }
  return dropped;
}

/** Reads a file (a note whole, a log from `row.readTo`), adds its chunks and records in `row` what was read. */
async function readSource(
  db: SqlDatabase,
  writer: ChunkWriter,
  workspace: string,
  file: ScannedFile,
  row: IndexedSource,
  clock: LocalClock,
): Promise<number> {
  const handle = await openSource(workspace, file);
  if (!handle) {
    // Gone or no longer a plain file since the scan: forget what it held; the next sync looks again.
    writer.dropAll(row.id);
    Object.assign(row, { size: -1, mtimeMs: -1, readTo: 0, lines: 0, tail: '' });
    saveRow(db, row);
    return 0;
  }
  try {
    const st = await handle.stat();
    let chunks: Chunk[];
    let progress = { readTo: 0, lines: 0, tail: '' };
    if (file.kind === 'session') {
      let from = { readTo: row.readTo, lines: row.lines };
      if (row.readTo > 0 && !(await continuesFrom(handle, st.size, row))) {
        writer.dropAll(row.id);
        from = { readTo: 0, lines: 0 };
      }
      const read = await readLogLines(handle, st.size, from, clock);
      chunks = read.chunks;
      progress = read.progress;
    } else {
      const bytes = await readRange(handle, 0, Math.min(st.size, MAX_NOTE_BYTES));
      chunks = noteChunks(bytes.toString('utf8')).map((c) => (file.day ? { ...c, day: file.day } : c));
    }
    writer.add(row.id, chunks);
    Object.assign(row, { dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ...progress });
    saveRow(db, row);
    return chunks.length;
  } finally {
    await handle.close();
  }
}

function saveRow(db: SqlDatabase, row: IndexedSource): void {
  db.run(
    'UPDATE source SET dev = ?, ino = ?, size = ?, mtime_ms = ?, read_to = ?, lines = ?, tail = ? WHERE id = ?',
    [row.dev, row.ino, row.size, row.mtimeMs, row.readTo, row.lines, row.tail, row.id],
  );
}
