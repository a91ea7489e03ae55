/**
 * MeaningSearch: what an embedding model adds to the memory index. It embeds
 * the passages that have no vector yet (in batches, the network call made
 * with the index lock let go, the vectors stored under it), and embeds a
 * query with a short time limit. When the endpoint fails it says why in
 * words and rests for a while, so searches go on by keywords without
 * waiting for it; the next pass picks up where the last one stopped.
 */
import { AppError, BudgetError, CancelledError, describeError, hasCode } from '../../errors/index.js';
import { type Logger, redactSecrets } from '../../log/index.js';
import type { Embedder } from '../../providers/embedder.js';
import type { SqlDatabase } from './database.js';
import { countPending, pendingPassages, pruneVectors, storeVectors } from './vectors.js';

/** Runs `use` on the synced index under its lock (MemoryIndex's withIndex). */
export type IndexRunner = <T>(signal: AbortSignal | undefined, use: (db: SqlDatabase) => T) => Promise<T>;

export interface MeaningOptions {
  embedder: Embedder;
  logger: Logger;
  /** Values never sent to the endpoint (every spelling): a passage holding one is embedded redacted. @defaultValue [] */
  secrets?: readonly string[];
  /** How long a search waits for its query's vector before going on by keywords. @defaultValue 2_000 */
  queryTimeoutMs?: number;
  /** Passages per embedding call. @defaultValue 128 */
  batchSize?: number;
  /** After a failed call, how long searches skip the endpoint and passes wait. @defaultValue 30_000 */
  restMs?: number;
  /** @defaultValue Date.now */
  now?: () => number;
}

/** A query's vector, or why the search is by keywords only. */
export type QueryMeaning = { vector: Float32Array } | { keywordOnly: string };

/** What one embedding pass did. */
export interface EmbedFigures {
  /** Passages embedded (each distinct text once). */
  embedded: number;
  /** Calls made to the endpoint. */
  calls: number;
  /** Passages still without a vector (the pass stopped at a failure, or files changed meanwhile). */
  pending: number;
  /** Why the pass stopped early, in one line. */
  stopped?: string;
}

/** The embedding half of one memory index. */
export class MeaningSearch {
  readonly model: string;
  private readonly embedder: Embedder;
  private readonly logger: Logger;
  private readonly queryTimeoutMs: number;
  private readonly batchSize: number;
  private readonly restMs: number;
  private readonly now: () => number;
  private readonly secrets: readonly string[];
  /** Until when the endpoint is left alone, and the reason searches are told. */
  private resting: { until: number; why: string } | undefined;
  private pass: Promise<EmbedFigures> | undefined;

  constructor(options: MeaningOptions) {
    this.embedder = options.embedder;
    this.model = options.embedder.model;
    this.logger = options.logger;
    this.queryTimeoutMs = positive(options.queryTimeoutMs, 2_000, 'queryTimeoutMs');
    this.batchSize = positive(options.batchSize, 128, 'batchSize');
    this.restMs = positive(options.restMs, 30_000, 'restMs');
    this.now = options.now ?? Date.now;
    this.secrets = options.secrets ?? [];
  }

  /** The query's vector; never throws but for an abort (a failure is a reason to search by keywords). */
  async query(text: string, signal?: AbortSignal): Promise<QueryMeaning> {
    const rest = this.rest();
    if (rest) return { keywordOnly: rest };
    try {
      const { vectors } = await this.embedder.embed([redactSecrets(text, this.secrets)], {
        timeoutMs: this.queryTimeoutMs,
        ...(signal ? { signal } : {}),
      });
      return { vector: vectors[0]! };
    } catch (err) {
      if (err instanceof CancelledError) throw err;
      return { keywordOnly: this.failed(err, 'a search query') };
    }
  }

  /**
   * Embeds every passage without a vector, a batch at a time; one pass at a
   * time (a call while one runs gets that pass). Stops at the first failure
   * (the figures say why) and while the endpoint rests.
   */
  embedPending(run: IndexRunner, signal?: AbortSignal): Promise<EmbedFigures> {
    this.pass ??= this.runPass(run, signal).finally(() => {
      this.pass = undefined;
    });
    return this.pass;
  }

  /** Starts a pass unless one runs or the endpoint rests; its failures are logged, not thrown. */
  embedInBackground(run: IndexRunner): void {
    if (this.pass || this.rest()) return;
    this.embedPending(run).catch((err: unknown) => {
      this.logger.warn({ err: describeError(err) }, 'memory index: embedding passages failed');
    });
  }

  /** Resolves when the pass running now (if any) ends. */
  async settled(): Promise<void> {
    await this.pass?.catch(() => undefined);
  }

  private async runPass(run: IndexRunner, signal?: AbortSignal): Promise<EmbedFigures> {
    const figures: EmbedFigures = { embedded: 0, calls: 0, pending: 0 };
    const model = this.model;
    for (;;) {
      const rest = this.rest();
      if (rest) {
        figures.stopped = rest;
        break;
      }
      const batch = await run(signal, (db) => pendingPassages(db, model, this.batchSize));
      if (batch.length === 0) break;
      let vectors: Float32Array[];
      try {
        figures.calls += 1;
        ({ vectors } = await this.embedder.embed(
          batch.map((p) => redactSecrets(p.text, this.secrets)),
          signal ? { signal } : {},
        ));
      } catch (err) {
        if (err instanceof CancelledError) throw err;
        figures.stopped = this.failed(err, 'passages');
        break;
      }
      await run(signal, (db) => storeVectors(db, model, batch, vectors));
      figures.embedded += batch.length;
    }
    figures.pending = await run(signal, (db) => {
      if (figures.stopped === undefined) pruneVectors(db, model);
      return countPending(db, model);
    });
    if (figures.embedded > 0) this.logger.info({ model, ...figures }, 'memory index: passages embedded');
    return figures;
  }

  /** Why the endpoint is being left alone now, or undefined. */
  private rest(): string | undefined {
    if (this.resting && this.now() < this.resting.until) return this.resting.why;
    this.resting = undefined;
    return undefined;
  }

  /** Records a failed call: the endpoint rests, the reason is logged once and returned. */
  private failed(err: unknown, what: string): string {
    const why = reasonOf(err);
    this.resting = { until: this.now() + this.restMs, why };
    this.logger.warn(
      { model: this.model, err: describeError(err), restMs: this.restMs },
      `memory index: embedding ${what} failed; searching by keywords meanwhile`,
    );
    return why;
  }
}

/** The one-line reason a search is by keywords only. */
function reasonOf(err: unknown): string {
  if (err instanceof BudgetError) return 'a spending limit is reached, so the embedding model is not called';
  if (hasCode(err, 'PROVIDER_AUTH')) return 'the embedding endpoint refused the key';
  if (hasCode(err, 'PROVIDER_BAD_RESPONSE')) return 'the embedding endpoint sent an unusable answer';
  if (err instanceof AppError && err.transient) return 'the embedding endpoint is unreachable';
  return 'the embedding endpoint failed';
}

function positive(value: number | undefined, fallback: number, name: string): number {
  const v = value ?? fallback;
  if (!(Number.isFinite(v) && v > 0)) throw new RangeError(`${name} must be > 0, got ${value}`);
  return v;
}
