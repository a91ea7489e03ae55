/**
 * OpenAIEmbedder: the Embedder port over an OpenAI-compatible
 * `/v1/embeddings` endpoint, through the openai SDK's `embeddings.create`.
 * No retries here: memory search falls back to keywords at once and the
 * index embeds what is missing on a later pass, so a retry would only make
 * a search wait.
 */
import type OpenAI from 'openai';
import { CancelledError, ProviderError } from '../../errors/index.js';
import { type Embedder, type Embeddings, type EmbedOptions, normalized } from '../embedder.js';
import { openaiClient } from './client.js';
import { type ErrorContext, timeoutError, toProviderError } from './errors.js';

export interface OpenAIEmbedderOptions {
  /** Sent as a bearer token; '' or undefined for local servers that need none. */
  apiKey: string | undefined;
  /** e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`. */
  baseURL: string;
  /** e.g. `text-embedding-3-small`. */
  model: string;
  /** Longest wait for one call's answer. @defaultValue 30_000 */
  timeoutMs?: number;
  /** The settings named in error messages. @defaultValue MAGPIE_EMBEDDING_MODEL for both */
  settings?: { url: string; key: string };
}

/** Embeddings from an OpenAI-compatible endpoint. */
export class OpenAIEmbedder implements Embedder {
  readonly model: string;
  readonly baseURL: string;
  private readonly client: OpenAI;
  private readonly timeoutMs: number;
  private readonly context: ErrorContext;

  constructor(options: OpenAIEmbedderOptions) {
    this.model = options.model;
    this.baseURL = options.baseURL;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    if (!(this.timeoutMs > 0)) throw new RangeError(`timeoutMs must be > 0, got ${options.timeoutMs}`);
    const settings = options.settings ?? { url: 'MAGPIE_EMBEDDING_MODEL', key: 'MAGPIE_EMBEDDING_MODEL' };
    this.context = {
      baseURL: options.baseURL,
      ...(options.apiKey ? { apiKey: options.apiKey } : {}),
      urlSetting: settings.url,
      keySetting: settings.key,
    };
    this.client = openaiClient({
      baseURL: options.baseURL,
      apiKey: options.apiKey,
      timeoutMs: Math.ceil(this.timeoutMs) + 1_000,
    });
  }

  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Embeddings> {
    const { signal } = options;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    if (signal?.aborted) throw new CancelledError();
    if (texts.length === 0) return { vectors: [], promptTokens: 0 };
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onAbort = () => controller.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const response = await this.client.embeddings.create(
        // Floats, not the SDK's default base64: every compatible server (Ollama, llama.cpp, vLLM) sends them.
        { model: this.model, input: [...texts], encoding_format: 'float' },
        { signal: controller.signal, timeout: timeoutMs + 1_000 },
      );
      return { vectors: this.vectorsOf(response, texts.length), promptTokens: response.usage?.prompt_tokens };
    } catch (err) {
      if (signal?.aborted) throw new CancelledError();
      if (timedOut) throw timeoutError(this.context, timeoutMs);
      throw toProviderError(err, this.context);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** The vectors in input order, normalised; an answer of the wrong shape is refused whole. */
  private vectorsOf(response: OpenAI.CreateEmbeddingResponse, count: number): Float32Array[] {
    const vectors: Float32Array[] = new Array(count);
    const data: unknown = response?.data;
    const bad = (why: string) =>
      new ProviderError(
        'PROVIDER_BAD_RESPONSE',
        `the embedding endpoint ${this.baseURL} sent an answer memory search cannot use (${why})`,
      );
    if (!Array.isArray(data) || data.length !== count) throw bad(`expected ${count} vectors`);
    let dimensions: number | undefined;
    data.forEach((item: unknown, position) => {
      const { index, embedding } = (item ?? {}) as { index?: unknown; embedding?: unknown };
      const at = typeof index === 'number' ? index : position;
      if (!Number.isInteger(at) || at < 0 || at >= count || vectors[at]) throw bad('bad or repeated index');
      if (!Array.isArray(embedding) || embedding.length === 0) throw bad('a vector is not a list of numbers');
      if (!embedding.every((x) => typeof x === 'number' && Number.isFinite(x))) {
        throw bad('a vector holds something other than finite numbers');
      }
      dimensions ??= embedding.length;
      if (embedding.length !== dimensions) throw bad('vectors of different lengths');
      vectors[at] = normalized(embedding as number[]);
    });
    return vectors;
  }
}
