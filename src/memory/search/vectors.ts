/**
 * The meaning half of memory search: passages' vectors in the `embedding`
 * table (keyed by model and the sha256 of the passage's text, so a passage
 * is embedded once however often its file is re-read), the passages still
 * without one, an exact scan for the passages nearest a query (cosine
 * similarity; vectors are stored at length one, so a dot product), and
 * reciprocal rank fusion of the keyword and vector rankings.
 */
import { createHash } from 'node:crypto';
import type { SqlDatabase } from './database.js';

/** The text of a passage as it is embedded: its heading (when it has one) above it. */
export function passageText(heading: string, body: string): string {
  return heading === '' ? body : `${heading}\n${body}`;
}

/** sha256 of a passage's text: its `chunk.hash`, half of its vector's key. */
export function passageHash(text: string): Uint8Array {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** A passage waiting for its vector. */
export interface PendingPassage {
  hash: Uint8Array;
  text: string;
}

/** Up to `max` distinct passages that have no vector from `model` yet. */
export function pendingPassages(db: SqlDatabase, model: string, max: number): PendingPassage[] {
  return db
    .all(
      `SELECT c.hash, min(c.heading) AS heading, min(c.body) AS body FROM chunk c
        WHERE NOT EXISTS (SELECT 1 FROM embedding e WHERE e.model = ? AND e.hash = c.hash)
        GROUP BY c.hash LIMIT ?`,
      [model, max],
    )
    .map((r) => ({ hash: r.hash as Uint8Array, text: passageText(String(r.heading), String(r.body)) }));
}

/** How many distinct passages have no vector from `model` yet. */
export function countPending(db: SqlDatabase, model: string): number {
  const row = db.get(
    `SELECT count(DISTINCT c.hash) AS n FROM chunk c
      WHERE NOT EXISTS (SELECT 1 FROM embedding e WHERE e.model = ? AND e.hash = c.hash)`,
    [model],
  );
  return Number(row?.n ?? 0);
}

/** Stores vectors (one per passage, in order) in one transaction. */
export function storeVectors(
  db: SqlDatabase,
  model: string,
  passages: readonly PendingPassage[],
  vectors: readonly Float32Array[],
): void {
  const insert = db.prepare('INSERT OR REPLACE INTO embedding (model, hash, vector) VALUES (?, ?, ?)');
  db.exec('BEGIN IMMEDIATE');
  try {
    passages.forEach((p, i) => {
      const v = vectors[i]!;
      insert.run([model, p.hash, new Uint8Array(v.buffer, v.byteOffset, v.byteLength)]);
    });
    db.exec('COMMIT');
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw err;
  } finally {
    insert.finalize();
  }
}

/** Drops vectors no passage has any more, and every other model's. Returns how many went. */
export function pruneVectors(db: SqlDatabase, model: string): number {
  const { changes } = db.run(
    'DELETE FROM embedding WHERE model <> ? OR NOT EXISTS (SELECT 1 FROM chunk c WHERE c.hash = embedding.hash)',
    [model],
  );
  return Number(changes);
}

/** A stored vector as Float32 (copied when SQLite's buffer is not 4-byte aligned). */
function asFloats(blob: Uint8Array): Float32Array {
  const aligned = blob.byteOffset % 4 === 0 ? blob : blob.slice();
  return new Float32Array(aligned.buffer, aligned.byteOffset, Math.floor(aligned.byteLength / 4));
}

/** A passage and its cosine similarity to the query. */
export interface VectorRank {
  id: number;
  similarity: number;
}

/**
 * The `count` passages nearest `query` by cosine similarity, best first: an
 * exact scan of every vector of `model` (vectors of another length, left by
 * a model that changed its size, are skipped). `days` keeps only passages
 * dated within the range.
 */
export function nearestPassages(
  db: SqlDatabase,
  model: string,
  query: Float32Array,
  count: number,
  days?: { since: number; until: number },
): VectorRank[] {
  const rows = db.all(
    `SELECT c.id, e.vector FROM chunk c JOIN embedding e ON e.model = ? AND e.hash = c.hash${days ? ' WHERE c.day BETWEEN ? AND ?' : ''}`,
    [model, ...(days ? [days.since, days.until] : [])],
  );
  const ranks: VectorRank[] = [];
  const n = query.length;
  for (const row of rows) {
    const v = asFloats(row.vector as Uint8Array);
    if (v.length !== n) continue;
    let dot = 0;
    for (let i = 0; i < n; i++) dot += v[i]! * query[i]!;
    ranks.push({ id: Number(row.id), similarity: dot });
  }
  ranks.sort((a, b) => b.similarity - a.similarity);
  return ranks.slice(0, count);
}

/** Reciprocal rank fusion's constant (Cormack et al. 2009): a rank r adds 1 / (k + r). */
export const RRF_K = 60;

/**
 * Reciprocal rank fusion: each id scores the sum over the rankings it is in
 * of 1 / (RRF_K + its 1-based rank there); best first, ties in the order of
 * the first ranking that holds them.
 *
 * @example fuseRanks([[7, 3], [3, 9]]) // [3, 7, 9]: 3 is in both
 */
export function fuseRanks(rankings: readonly (readonly number[])[]): { id: number; score: number }[] {
  const scores = new Map<number, number>();
  for (const ranking of rankings) {
    ranking.forEach((id, i) => {
      scores.set(id, (scores.get(id) ?? 0) + 1 / (RRF_K + i + 1));
    });
  }
  return [...scores].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score);
}
