/**
 * One search of the memory index: chunks holding every word of the query
 * first, then (when they are fewer than asked for) chunks holding some, each
 * group in FTS5's BM25 order (a heading counts half as much as the text under
 * it) — a chunk with all the words is what people mean, and ranking the few
 * that have them all is cheaper than ranking every chunk with a common word.
 * Optionally only within a range of days, best first, each hit with a snippet around the words that matched and
 * where it came from (file and line, the note's or message's date, the
 * conversation and who spoke). Given the query's vector, the search is
 * hybrid: that keyword ranking and the passages nearest the vector are
 * fused by reciprocal rank fusion (vectors.ts), and a passage found by
 * meaning alone is shown from its start.
 */
import { AppError } from '../../errors/index.js';
import { redactSecrets } from '../../log/index.js';
import { sessionKeyFromFileName } from '../../sessions/session-key.js';
import type { SqlDatabase } from './database.js';
import { formatDay, type LocalClock } from './dates.js';
import { toMatchExpressions } from './query.js';
import type { SourceKind } from './sources.js';
import { fuseRanks, nearestPassages } from './vectors.js';

export interface SearchOptions {
  /** Hits returned at most, 1-50. @defaultValue 8 */
  limit?: number;
  /** Only chunks dated on or after this day (YYYYMMDD); MEMORY.md, which has no date, is then left out. */
  since?: number;
  /** Only chunks dated on or before this day (YYYYMMDD); MEMORY.md is then left out. */
  until?: number;
  /** Aborts waiting for the index. */
  signal?: AbortSignal;
}

/** What runSearch needs besides the query. */
export interface SearchContext {
  clock: LocalClock;
  /** Values never shown, in every spelling (see secretSpellings). */
  secrets: readonly string[];
  /** The query's vector and the model that made it: the search is hybrid (keywords and meaning). */
  meaning?: { model: string; vector: Float32Array };
}

/** One hit. */
export interface MemoryHit {
  kind: SourceKind;
  /** The file, relative to the workspace. */
  path: string;
  /** 1-based line where the paragraph or message starts. */
  line: number;
  /** The note's or message's date, YYYY-MM-DD (none for MEMORY.md). */
  date?: string;
  /** When the message was written, HH:MM in the configured time zone. */
  time?: string;
  /** The conversation's session key. */
  session?: string;
  role?: 'user' | 'assistant';
  /** The Markdown heading the paragraph sits under. */
  heading?: string;
  /** Text around the matched words; the words themselves are between {@link MARK_START} and {@link MARK_END}. */
  snippet: string;
  /**
   * Lower is better: the BM25 score as SQLite reports it, or in a hybrid search minus the
   * reciprocal-rank-fusion score.
   */
  score: number;
}

export interface SearchResult {
  hits: MemoryHit[];
  /** What was searched: files in the index. */
  searched: { notes: number; sessions: number; longTerm: boolean };
  /** Why the search matched words only, though meaning was wanted (e.g. the embedding endpoint is unreachable). */
  keywordOnly?: string;
}

/** The `keywordOnly` reason of an index without an embedding model. */
export const NO_EMBEDDING_MODEL = 'no embedding model is set (MAGPIE_EMBEDDING_MODEL)';

/** Marks around a matched word in a snippet. */
export const MARK_START = '\u0002';
export const MARK_END = '\u0003';

/** Hits at most per search. */
export const MAX_LIMIT = 50;
export const DEFAULT_LIMIT = 8;

/** Tokens of context a snippet shows at most. */
const SNIPPET_TOKENS = 40;
/** Characters shown of a passage found by meaning alone (no word to centre a snippet on). */
const MEANING_SNIPPET_CHARS = 280;
/** Candidates each ranking gives the fusion: at least this many, else three times the limit. */
const FUSION_POOL = 30;

/**
 * Runs a search on an up-to-date index.
 *
 * @throws AppError TOOL_FAILED for a query with no words, a bad limit or since after until.
 */
export function runSearch(
  db: SqlDatabase,
  { clock, secrets, meaning }: SearchContext,
  query: string,
  options: SearchOptions,
): SearchResult {
  const match = toMatchExpressions(query);
  if (match === undefined) {
    throw new AppError('TOOL_FAILED', `the query "${query.slice(0, 80)}" has no words to search for`);
  }
  const limit = options.limit ?? DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw new AppError('TOOL_FAILED', `limit must be a whole number from 1 to ${MAX_LIMIT}, got ${limit}`);
  }
  const { since, until } = options;
  if (since !== undefined && until !== undefined && since > until) {
    throw new AppError('TOOL_FAILED', `since (${formatDay(since)}) is after until (${formatDay(until)})`);
  }
  const dated = since !== undefined || until !== undefined;
  /**
   * The best `count` chunks matching `expression` in BM25 order; `within`
   * keeps only chunks that also match it. BM25 is computed only for the rows
   * that pass every condition (`+rowid` keeps FTS5 from turning the IN list
   * into one lookup per candidate).
   */
  const rank = (expression: string, count: number, within?: string) =>
    db.all(
      `SELECT chunk_fts.rowid AS id, bm25(chunk_fts, 1.0, 0.5) AS score
         FROM chunk_fts${dated ? ' JOIN chunk c ON c.id = chunk_fts.rowid' : ''}
        WHERE chunk_fts MATCH ?${within ? ' AND +chunk_fts.rowid IN (SELECT g.rowid FROM chunk_fts AS g WHERE g.chunk_fts MATCH ?)' : ''}${dated ? ' AND c.day BETWEEN ? AND ?' : ''}
        ORDER BY score LIMIT ?`,
      [expression, ...(within ? [within] : []), ...(dated ? [since ?? 0, until ?? 99_991_231] : []), count],
    );
  // Chunks holding every word first, then (while fewer than `limit`) those holding at least two,
  // then those holding any; each group in BM25 order over all the words. Ranking only the chunks
  // with two words together is what keeps a question of common words cheap.
  // A hybrid search asks both rankings for a deeper pool, then fuses them.
  const pool = meaning ? Math.max(FUSION_POOL, limit * 3) : limit;
  const ranked: Record<string, unknown>[] = [];
  const seen = new Set<number>();
  const take = (rows: Record<string, unknown>[]) => {
    for (const row of rows) {
      if (ranked.length >= pool) return;
      if (seen.has(Number(row.id))) continue;
      seen.add(Number(row.id));
      ranked.push(row);
    }
  };
  take(rank(match.all, pool));
  if (ranked.length < pool && match.pairs) take(rank(match.any, pool + ranked.length, match.pairs));
  if (ranked.length < pool && match.terms > 1) take(rank(match.any, pool + ranked.length));
  const chosen: { id: number; score: number }[] = meaning
    ? fuseRanks([
        ranked.map((r) => Number(r.id)),
        nearestPassages(
          db,
          meaning.model,
          meaning.vector,
          pool,
          dated ? { since: since ?? 0, until: until ?? 99_991_231 } : undefined,
        ).map((r) => r.id),
      ])
        .slice(0, limit)
        .map(({ id, score }) => ({ id, score: -score }))
    : ranked.map((r) => ({ id: Number(r.id), score: Number(r.score) }));
  const detail = db.prepare(
    `SELECT c.line, c.day, c.ts, c.role, c.heading, s.path, s.kind,
            c.body, snippet(chunk_fts, 0, ?, ?, '…', ${SNIPPET_TOKENS}) AS snip
       FROM chunk_fts JOIN chunk c ON c.id = chunk_fts.rowid JOIN source s ON s.id = c.source_id
      WHERE chunk_fts MATCH ? AND chunk_fts.rowid = ?`,
  );
  // A passage found by meaning alone holds none of the words: shown from its start.
  const plain = db.prepare(
    `SELECT c.line, c.day, c.ts, c.role, c.heading, s.path, s.kind, c.body
       FROM chunk c JOIN source s ON s.id = c.source_id WHERE c.id = ?`,
  );
  const hits: MemoryHit[] = [];
  try {
    for (const { id, score } of chosen) {
      const row = detail.get([MARK_START, MARK_END, match.any, id]) ?? leading(plain.get([id]));
      if (row) hits.push(toHit(row, score, clock, secrets));
    }
  } finally {
    detail.finalize();
    plain.finalize();
  }
  return { hits, searched: indexedFiles(db) };
}

/** A row without a snippet given the start of its passage as one, cut at a word. */
function leading(row: Record<string, unknown> | null): Record<string, unknown> | null {
  if (!row) return null;
  const body = String(row.body ?? '').replace(/\s+/g, ' ');
  if (body.length <= MEANING_SNIPPET_CHARS) return { ...row, snip: body };
  const cut = body.slice(0, MEANING_SNIPPET_CHARS);
  const space = cut.lastIndexOf(' ');
  return { ...row, snip: `${space > MEANING_SNIPPET_CHARS / 2 ? cut.slice(0, space) : cut}…` };
}

function toHit(
  row: Record<string, unknown>,
  score: number,
  clock: LocalClock,
  secrets: readonly string[],
): MemoryHit {
  const kind = String(row.kind) as SourceKind;
  const file = String(row.path);
  const hit: MemoryHit = {
    kind,
    path: file,
    line: Number(row.line),
    snippet: safeSnippet(String(row.snip ?? ''), String(row.body ?? ''), secrets),
    score,
  };
  if (row.day !== null && row.day !== undefined) hit.date = formatDay(Number(row.day));
  if (row.ts !== null && row.ts !== undefined) hit.time = clock.local(Number(row.ts)).time;
  if (row.role === 'user' || row.role === 'assistant') hit.role = row.role;
  if (typeof row.heading === 'string' && row.heading !== '') hit.heading = row.heading;
  if (kind === 'session') hit.session = sessionOf(file);
  return hit;
}

/** Characters of a passage shown in place of a snippet that would cut through a secret. */
const SECRET_SAFE_CHARS = 480;

/**
 * The snippet, unless the passage holds a secret: a snippet may start or end
 * inside it, and a cut secret no longer matches the redaction of whole
 * values. Such a passage is shown from its start, its secrets redacted.
 */
function safeSnippet(snippet: string, body: string, secrets: readonly string[]): string {
  if (!secrets.some((s) => body.includes(s))) return snippet;
  const redacted = redactSecrets(body, secrets);
  return redacted.length <= SECRET_SAFE_CHARS ? redacted : `${redacted.slice(0, SECRET_SAFE_CHARS)}…`;
}

/** The session key of `sessions/<name>[.<stamp>].jsonl` (only names that decode are indexed). */
function sessionOf(file: string): string {
  const name = file.replace(/^sessions\//, '').split('.')[0] ?? '';
  return sessionKeyFromFileName(name) ?? name;
}

/** The files in the index, by kind. */
export function indexedFiles(db: SqlDatabase): SearchResult['searched'] {
  const byKind = new Map(
    db
      .all('SELECT kind, count(*) AS n FROM source WHERE size >= 0 GROUP BY kind')
      .map((r) => [String(r.kind), Number(r.n)]),
  );
  return {
    notes: byKind.get('note') ?? 0,
    sessions: byKind.get('session') ?? 0,
    longTerm: (byKind.get('longterm') ?? 0) > 0,
  };
}
