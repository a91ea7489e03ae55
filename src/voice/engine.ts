/**
 * The speech engine port: text in, OGG/Opus out. Engines: `endpoint` (an
 * OpenAI-compatible /v1/audio/speech, in providers/openai/speech.ts) and
 * `espeak` (espeak-ng piped to opusenc, offline: espeak.ts).
 */

/** Speaks text. */
export interface SpeechEngine {
  /** `endpoint` or `espeak`: for logs, doctor and metrics. */
  readonly name: string;
  /** What prices a character: the TTS model id for `endpoint`, `espeak` otherwise. */
  readonly model: string;
  /**
   * Speaks `text`; resolves with an OGG/Opus stream.
   * @throws AppError TTS_FAILED (the engine failed or timed out, or returned no OGG/Opus)
   */
  speak(text: string, signal?: AbortSignal): Promise<Buffer>;
}
