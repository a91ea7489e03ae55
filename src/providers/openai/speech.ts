/**
 * The `endpoint` speech engine: an OpenAI-compatible POST /v1/audio/speech
 * through the openai SDK (`audio.speech.create`), asking for `opus` (an
 * OGG/Opus stream, what voice notes are). The answer is checked to be
 * OGG/Opus and capped; any failure is AppError TTS_FAILED with the SDK
 * error's message (key redacted) as its cause.
 */
import type { OpenAI } from 'openai';
import { AppError, describeError } from '../../errors/index.js';
import type { SpeechEngine } from '../../voice/engine.js';
import { readOggOpus } from '../../voice/ogg.js';
import { openaiClient } from './client.js';
import { toProviderError } from './errors.js';

export interface EndpointSpeechOptions {
  baseURL: string;
  apiKey: string | undefined;
  /** The variable that holds the key (named in messages). */
  keyVar?: string;
  /** MAGPIE_TTS_MODEL. */
  model: string;
  /** MAGPIE_TTS_VOICE. */
  voice: string;
  /** The longest one reply may take to speak. @defaultValue 60000 */
  timeoutMs?: number;
  /** The largest answer accepted. @defaultValue 16 MiB */
  maxBytes?: number;
}

/** /v1/audio/speech as a SpeechEngine. */
export class EndpointSpeechEngine implements SpeechEngine {
  readonly name = 'endpoint';
  readonly model: string;
  readonly #client: OpenAI;
  readonly #o: EndpointSpeechOptions;

  constructor(options: EndpointSpeechOptions) {
    this.#o = options;
    this.model = options.model;
    this.#client = openaiClient({
      baseURL: options.baseURL,
      apiKey: options.apiKey,
      timeoutMs: options.timeoutMs ?? 60_000,
      maxRetries: 1,
    });
  }

  async speak(text: string, signal?: AbortSignal): Promise<Buffer> {
    const maxBytes = this.#o.maxBytes ?? 16 * 1024 * 1024;
    let bytes: Buffer;
    try {
      const response = await this.#client.audio.speech.create(
        { model: this.#o.model, voice: this.#o.voice, input: text, response_format: 'opus' },
        signal ? { signal } : {},
      );
      const length = Number(response.headers.get('content-length') ?? 0);
      if (length > maxBytes) throw new AppError('TTS_FAILED', `the speech endpoint sent ${length} bytes`);
      bytes = Buffer.from(await response.arrayBuffer());
    } catch (err) {
      if (err instanceof AppError && err.code === 'TTS_FAILED') throw err;
      const mapped = toProviderError(err, {
        baseURL: this.#o.baseURL,
        ...(this.#o.apiKey ? { apiKey: this.#o.apiKey } : {}),
        urlSetting: 'MAGPIE_TTS_MODEL',
        ...(this.#o.keyVar ? { keySetting: this.#o.keyVar } : {}),
      });
      throw new AppError('TTS_FAILED', `speech failed: ${describeError(mapped)}`, { cause: mapped });
    }
    if (bytes.length > maxBytes)
      throw new AppError('TTS_FAILED', `the speech endpoint sent ${bytes.length} bytes`);
    if (!readOggOpus(bytes)) throw new AppError('TTS_FAILED', 'the speech endpoint sent no OGG/Opus audio');
    return bytes;
  }
}
