/**
 * The LLMProvider for OpenAI and compatible endpoints (OpenRouter, Ollama,
 * vLLM, llama.cpp) through the `openai` SDK: streamed chat completions with
 * tool calls, model listing and speech to text. Our own loop does timeouts
 * (idle time, streaming included), retries of transient failures and
 * cancellation; every failure leaves as a ProviderError or CancelledError.
 */
import { randomUUID } from 'node:crypto';
import { type OpenAI, toFile } from 'openai';
import {
  type AppError,
  CancelledError,
  ConfigError,
  emptyResponseError,
  ProviderError,
} from '../../errors/index.js';
import { type Logger, silentLogger } from '../../log/index.js';
import { DeltaWatch } from '../delta-watch.js';
import type { AudioFile, ChatRequest, ChatResponse, LLMProvider } from '../types.js';
import { cacheHintsFor, type PromptCacheMode, promptCacheKey, withCacheControl } from './cache-hints.js';
import { openaiClient } from './client.js';
import { type ErrorContext, timeoutError, toProviderError } from './errors.js';
import { toSdkMessage, toSdkTools } from './messages.js';
import { withRetry } from './retry.js';
import { StreamAccumulator } from './stream-accumulator.js';

export interface OpenAIProviderOptions {
  /** Sent as a bearer token; '' for local servers that need none. */
  apiKey: string;
  /** e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`. */
  baseURL: string;
  /** The default model. */
  model: string;
  /**
   * Longest wait for the answer to start, and for each next chunk while it streams.
   * @defaultValue 120_000
   */
  timeoutMs?: number;
  /**
   * Retries of transient failures (connection errors, timeouts, 408/409/429/5xx). A chat call whose text
   * was already streamed to `onDelta` is not retried, so the user never sees text twice.
   * @defaultValue 2
   */
  maxRetries?: number;
  /**
   * Delay before the first retry; doubles on each next one (±20% jitter).
   * @defaultValue 500
   */
  retryBaseMs?: number;
  /**
   * Cap on any one retry delay, a server's Retry-After included.
   * @defaultValue 8_000
   */
  retryMaxMs?: number;
  /** @defaultValue a silent logger */
  logger?: Logger;
  /**
   * Model for `transcribe`.
   * @defaultValue 'whisper-1'
   */
  transcribeModel?: string;
  /**
   * Prompt-cache hints: `auto` sends `prompt_cache_key` to OpenAI's API and `cache_control`
   * breakpoints for Claude models elsewhere (see cache-hints.ts); `off` sends neither.
   * @defaultValue 'auto'
   */
  promptCache?: PromptCacheMode;
  /**
   * The settings error messages tell the user to check (a fallback model's endpoint is not OPENAI_BASE_URL).
   * @defaultValue `{ url: 'OPENAI_BASE_URL', key: 'OPENAI_API_KEY' }`
   */
  settings?: { url?: string; key?: string };
}

/**
 * Chat completions over the OpenAI protocol.
 *
 * @example
 * const provider = new OpenAIProvider({ apiKey, baseURL: 'https://api.openai.com/v1', model: 'gpt-4o-mini' });
 * const reply = await provider.chat({ messages: [{ role: 'user', content: 'hi' }], onDelta: (t) => out.write(t) });
 */
export class OpenAIProvider implements LLMProvider {
  readonly model: string;
  private readonly client: OpenAI;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly retryBaseMs: number;
  private readonly retryMaxMs: number;
  private readonly transcribeModel: string;
  private readonly logger: Logger;
  private readonly context: ErrorContext;
  private readonly completionTokensField: 'max_tokens' | 'max_completion_tokens';
  private readonly baseURL: string;
  private readonly promptCache: PromptCacheMode;

  constructor(options: OpenAIProviderOptions) {
    if (!URL.canParse(options.baseURL)) {
      throw new ConfigError(`"${options.baseURL}" is not a URL: check OPENAI_BASE_URL`);
    }
    if (!options.model) throw new ConfigError('no model given: set MAGPIE_MODEL');
    this.model = options.model;
    this.timeoutMs = positive(options.timeoutMs, 120_000, 'timeoutMs');
    this.maxRetries = nonNegative(options.maxRetries, 2, 'maxRetries');
    this.retryBaseMs = nonNegative(options.retryBaseMs, 500, 'retryBaseMs');
    this.retryMaxMs = nonNegative(options.retryMaxMs, 8_000, 'retryMaxMs');
    this.transcribeModel = options.transcribeModel || 'whisper-1';
    this.logger = (options.logger ?? silentLogger()).child({ component: 'provider' });
    this.context = {
      baseURL: options.baseURL,
      apiKey: options.apiKey,
      ...(options.settings?.url ? { urlSetting: options.settings.url } : {}),
      ...(options.settings?.key ? { keySetting: options.settings.key } : {}),
    };
    this.baseURL = options.baseURL;
    this.promptCache = options.promptCache ?? 'auto';
    if (this.promptCache !== 'auto' && this.promptCache !== 'off') {
      throw new ConfigError(
        `provider option promptCache must be auto or off, got ${String(this.promptCache)}`,
      );
    }
    // OpenAI's newer models refuse max_tokens; compatible servers mostly know only max_tokens.
    this.completionTokensField =
      new URL(options.baseURL).hostname === 'api.openai.com' ? 'max_completion_tokens' : 'max_tokens';
    this.client = openaiClient({
      baseURL: options.baseURL,
      apiKey: options.apiKey,
      // Retries and timeouts are ours; the SDK's own timer (headers only) is a slightly later backstop.
      timeoutMs: Math.ceil(this.timeoutMs) + 1_000,
    });
  }

  /** One streamed chat completion. Rejects with ProviderError (see the port) or CancelledError. */
  async chat(request: ChatRequest): Promise<ChatResponse> {
    const deltas = new DeltaWatch(request.onDelta);
    const started = Date.now();
    const response = await this.retrying(
      request.signal,
      (err) => !deltas.streamed && !(request.failFast === true && this.betterElsewhere(err)),
      () => this.chatOnce(request, deltas.forward),
    );
    this.logger.debug(
      {
        model: response.model,
        ms: Date.now() - started,
        toolCalls: response.toolCalls.length,
        finishReason: response.finishReason,
        usage: response.usage,
      },
      'chat completion',
    );
    return response;
  }

  /** Model ids the endpoint lists (GET /models). */
  async listModels(signal?: AbortSignal): Promise<string[]> {
    return this.retrying(signal, undefined, async () => {
      const page = await this.call(signal, (s) => this.client.models.list({ signal: s }));
      const data: unknown = (page as { data?: unknown }).data;
      if (!Array.isArray(data)) throw badResponse('the model list has no data array');
      return data.flatMap((m) => (typeof m?.id === 'string' ? [m.id as string] : []));
    });
  }

  /** Speech to text through /audio/transcriptions with `transcribeModel`. */
  async transcribe(audio: AudioFile, signal?: AbortSignal): Promise<string> {
    return this.retrying(signal, undefined, async () => {
      const file = await toFile(audio.bytes, audio.fileName, { type: audio.mimeType });
      const result = await this.call(signal, (s) =>
        this.client.audio.transcriptions.create({ file, model: this.transcribeModel }, { signal: s }),
      );
      const text: unknown = (result as { text?: unknown }).text;
      if (typeof text !== 'string') throw badResponse('the transcription has no text');
      return text;
    });
  }

  private async chatOnce(
    request: ChatRequest,
    onDelta: ((text: string) => void) | undefined,
  ): Promise<ChatResponse> {
    const tools = toSdkTools(request.tools);
    const model = request.model ?? this.model;
    const hints = cacheHintsFor(this.baseURL, model, this.promptCache);
    const system = request.messages[0];
    const sdkMessages = request.messages.map(toSdkMessage);
    // Fields that never change within a session first, the messages last: the body of each call
    // then begins with the previous call's bytes (see docs/ARCHITECTURE.md, prompt caching).
    const body: OpenAI.ChatCompletionCreateParamsStreaming = {
      model,
      stream: true,
      stream_options: { include_usage: true },
      ...(request.maxTokens !== undefined ? { [this.completionTokensField]: request.maxTokens } : {}),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      ...(hints.promptCacheKey && request.cacheKey
        ? { prompt_cache_key: promptCacheKey(request.cacheKey) }
        : {}),
      ...(tools ? { tools } : {}),
      messages: hints.cacheControl
        ? withCacheControl(sdkMessages, system?.role === 'system' ? system.staticChars : undefined)
        : sdkMessages,
    };
    return this.call(request.signal, async (signal, touch) => {
      const stream = await this.client.chat.completions.create(body, { signal });
      const accumulator = new StreamAccumulator();
      for await (const chunk of stream) {
        touch();
        const text = accumulator.add(chunk);
        if (text && onDelta) onDelta(text);
      }
      // The SDK ends the iteration quietly on abort; `call` turns that into the right error.
      if (signal.aborted) return accumulator.result();
      if (accumulator.empty) throw badResponse('the stream ended without a completion');
      return checkedCompletion(accumulator, request.allowEmpty === true);
    });
  }

  /**
   * Runs one SDK call under an attempt-scoped signal that fires on the caller's abort or when the endpoint
   * stays silent for `timeoutMs` (`touch()` restarts the clock), and maps whatever it throws.
   */
  private async call<T>(
    outer: AbortSignal | undefined,
    run: (signal: AbortSignal, touch: () => void) => Promise<T>,
  ): Promise<T> {
    if (outer?.aborted) throw new CancelledError();
    const controller = new AbortController();
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const touch = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, this.timeoutMs);
    };
    const onAbort = () => controller.abort();
    outer?.addEventListener('abort', onAbort, { once: true });
    touch();
    try {
      const result = await run(controller.signal, touch);
      if (outer?.aborted) throw new CancelledError();
      if (timedOut) throw timeoutError(this.context, this.timeoutMs);
      return result;
    } catch (err) {
      if (outer?.aborted) throw new CancelledError();
      if (timedOut) throw timeoutError(this.context, this.timeoutMs);
      throw toProviderError(err, this.context);
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * With another model to turn to, a retry is not worth its wait: the endpoint could not be reached or
   * stayed silent (a time-out costs timeoutMs again), or it asked for a pause longer than any retry delay.
   */
  private betterElsewhere(err: AppError): boolean {
    if (err.code === 'PROVIDER_UNREACHABLE') return true;
    return err instanceof ProviderError && (err.retryAfterMs ?? 0) > this.retryMaxMs;
  }

  private retrying<T>(
    signal: AbortSignal | undefined,
    canRetry: ((err: AppError) => boolean) | undefined,
    run: () => Promise<T>,
  ) {
    const attemptId = randomUUID().slice(0, 8);
    return withRetry(run, {
      maxRetries: this.maxRetries,
      baseMs: this.retryBaseMs,
      maxMs: this.retryMaxMs,
      ...(signal ? { signal } : {}),
      ...(canRetry ? { canRetry } : {}),
      onRetry: (err: AppError, retry: number, delayMs: number) => {
        this.logger.warn(
          { call: attemptId, code: err.code, retry, of: this.maxRetries, delayMs },
          err.message,
        );
      },
    });
  }
}

/**
 * The accumulated completion, or PROVIDER_EMPTY_RESPONSE (transient) when it carried no
 * choice at all, or neither text nor tool calls and the caller did not `allowEmpty`.
 */
function checkedCompletion(accumulator: StreamAccumulator, allowEmpty: boolean): ChatResponse {
  if (accumulator.choiceless) throw emptyResponseError('the completion carried no choices');
  const response = accumulator.result();
  if (!allowEmpty && response.toolCalls.length === 0 && response.content.trim() === '') {
    throw emptyResponseError(`no text and no tool calls, finish_reason ${response.finishReason ?? 'none'}`);
  }
  return response;
}

function badResponse(what: string): ProviderError {
  return new ProviderError('PROVIDER_BAD_RESPONSE', `the model endpoint sent an unusable answer: ${what}`);
}

function positive(value: number | undefined, fallback: number, name: string): number {
  const n = value ?? fallback;
  if (!Number.isFinite(n) || n <= 0)
    throw new ConfigError(`provider option ${name} must be above 0, got ${n}`);
  return n;
}

function nonNegative(value: number | undefined, fallback: number, name: string): number {
  const n = value ?? fallback;
  if (!Number.isFinite(n) || n < 0)
    throw new ConfigError(`provider option ${name} must be 0 or more, got ${n}`);
  return n;
}
