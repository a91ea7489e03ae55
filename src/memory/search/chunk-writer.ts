/**
 * ChunkWriter: writes a file's chunks to `chunk` and their text to
 * `chunk_fts`, and drops them again.
 */
import type { Chunk } from './chunks.js';
import type { SqlDatabase, SqlStatement } from './database.js';
import { passageHash, passageText } from './vectors.js';

/**
 * Writes chunks to `chunk` and their text to `chunk_fts`, a file at a time:
 * the full-text rows are copied inside SQLite (one statement per file), so
 * each text crosses from JavaScript into SQLite once. Prepared once per sync.
 */
export class ChunkWriter {
  private readonly insertChunk: SqlStatement;
  private readonly indexText: SqlStatement;
  private readonly forgetText: SqlStatement;
  private readonly deleteChunks: SqlStatement;

  /**
   * @param bulk the index is being built from nothing: chunks go in alone and
   *   `finish` indexes all their text at once (a third of the time of file-by-file
   *   inserts, which make FTS5 merge many small segments).
   */
  constructor(
    private readonly db: SqlDatabase,
    private readonly bulk: boolean,
  ) {
    this.insertChunk = db.prepare(
      'INSERT INTO chunk (source_id, line, day, ts, role, heading, body, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.indexText = db.prepare(
      'INSERT INTO chunk_fts (rowid, body, heading) SELECT id, body, heading FROM chunk WHERE source_id = ? AND id >= ?',
    );
    // An external-content FTS5 table forgets a row only when given the text it indexed.
    this.forgetText = db.prepare(
      "INSERT INTO chunk_fts (chunk_fts, rowid, body, heading) SELECT 'delete', id, body, heading FROM chunk WHERE source_id = ?",
    );
    this.deleteChunks = db.prepare('DELETE FROM chunk WHERE source_id = ?');
  }

  /** Adds a file's new chunks. */
  add(sourceId: number, chunks: Chunk[]): void {
    let first: number | bigint | undefined;
    for (const c of chunks) {
      const { lastInsertRowid } = this.insertChunk.run([
        sourceId,
        c.line,
        c.day ?? null,
        c.ts ?? null,
        c.role ?? null,
        c.heading,
        c.body,
        passageHash(passageText(c.heading, c.body)),
      ]);
      first ??= lastInsertRowid;
    }
    // New rows get ids above every existing one, so `id >= first` is exactly this batch.
    if (first !== undefined && !this.bulk) this.indexText.run([sourceId, first]);
  }

  /** Indexes the text of every chunk, after a bulk build. */
  finish(): void {
    if (this.bulk) this.db.exec("INSERT INTO chunk_fts (chunk_fts) VALUES ('rebuild')");
  }

  /** Drops all of a file's chunks. */
  dropAll(sourceId: number): void {
    this.forgetText.run([sourceId]);
    this.deleteChunks.run([sourceId]);
  }

  close(): void {
    for (const st of [this.insertChunk, this.indexText, this.forgetText, this.deleteChunks]) st.finalize();
  }
}
