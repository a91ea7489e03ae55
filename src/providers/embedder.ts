/**
 * The Embedder port: texts in, one vector each out, from an embedding model
 * (memory search's meaning half). Only providers/openai knows the SDK; the
 * budget wraps it like the chat provider (budget/budgeted-embedder.ts).
 */

/** What one embedding call returned. */
export interface Embeddings {
  /** One vector per input text, in the order given, each of length one (cosine = dot product). */
  vectors: Float32Array[];
  /** Input tokens the endpoint reported; undefined when it reported none. */
  promptTokens: number | undefined;
}

/** Turns texts into vectors. */
export interface Embedder {
  /** The model name sent to the endpoint: part of every cached vector's key. */
  readonly model: string;
  /** The endpoint, for messages and the benchmark (no credentials). */
  readonly baseURL: string;
  /**
   * Embeds `texts` in one call.
   *
   * @throws AppError (ProviderError PROVIDER_UNREACHABLE for a timeout, a refused connection or a 5xx;
   *   BudgetError at a limit; CancelledError on abort).
   */
  embed(texts: readonly string[], options?: EmbedOptions): Promise<Embeddings>;
}

export interface EmbedOptions {
  signal?: AbortSignal;
  /** This call's time limit; the embedder's own when unset. */
  timeoutMs?: number;
}

/** `vector` scaled to length one (a zero vector stays zero). */
export function normalized(vector: ArrayLike<number>): Float32Array {
  const out = Float32Array.from(vector);
  let sum = 0;
  for (const x of out) sum += x * x;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < out.length; i++) out[i] = out[i]! / norm;
  return out;
}
