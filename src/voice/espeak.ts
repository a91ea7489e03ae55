/**
 * The offline engine: `espeak-ng --stdin --stdout -v VOICE` (WAV) piped into
 * `opusenc - -` (OGG/Opus). Both are spawned with fixed argv, no shell; the
 * text goes on espeak's stdin, never on a command line. The voice name is
 * checked against a strict pattern (config does too). A time limit kills
 * both; the output is capped.
 */
import { spawn } from 'node:child_process';
import { ESPEAK_VOICE_PATTERN } from '../config/voice.js';
import { AppError } from '../errors/index.js';
import type { SpeechEngine } from './engine.js';
import { readOggOpus } from './ogg.js';

export interface EspeakOptions {
  /** espeak-ng's `-v`. @defaultValue 'en' */
  voice?: string;
  /** The longest one phrase may take to speak and encode. @defaultValue 30000 */
  timeoutMs?: number;
  /** The largest OGG accepted. @defaultValue 16 MiB */
  maxBytes?: number;
  /** The programs (tests point them elsewhere). @defaultValue 'espeak-ng', 'opusenc' */
  espeak?: string;
  opusenc?: string;
}

/** espeak-ng + opusenc as a SpeechEngine. */
export class EspeakEngine implements SpeechEngine {
  readonly name = 'espeak';
  readonly model = 'espeak';
  readonly #voice: string;
  readonly #timeoutMs: number;
  readonly #maxBytes: number;
  readonly #espeak: string;
  readonly #opusenc: string;

  constructor(options: EspeakOptions = {}) {
    this.#voice = options.voice ?? 'en';
    if (!ESPEAK_VOICE_PATTERN.test(this.#voice)) {
      throw new RangeError(
        `"${this.#voice.slice(0, 40)}" is not an espeak-ng voice name (e.g. en, en-us, de+f3)`,
      );
    }
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#maxBytes = options.maxBytes ?? 16 * 1024 * 1024;
    this.#espeak = options.espeak ?? 'espeak-ng';
    this.#opusenc = options.opusenc ?? 'opusenc';
  }

  async speak(text: string, signal?: AbortSignal): Promise<Buffer> {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    // One failing program stops the other (espeak-ng would block on a pipe nobody reads).
    const stop = new AbortController();
    const all = AbortSignal.any([stop.signal, timeout, ...(signal ? [signal] : [])]);
    const options = { stdio: ['pipe', 'pipe', 'ignore'] as ['pipe', 'pipe', 'ignore'], signal: all };
    const espeak = spawn(this.#espeak, ['--stdin', '--stdout', '-v', this.#voice], options);
    const opusenc = spawn(this.#opusenc, ['--quiet', '-', '-'], options);
    espeak.stdout.pipe(opusenc.stdin);
    // A broken pipe surfaces as the exit status below.
    for (const stream of [espeak.stdin, espeak.stdout, opusenc.stdin]) stream.on('error', () => {});
    espeak.stdin.end(text);
    const chunks: Buffer[] = [];
    let size = 0;
    opusenc.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > this.#maxBytes) stop.abort();
      else chunks.push(chunk);
    });
    let first: string | undefined;
    const watch = async (child: ReturnType<typeof spawn>, name: string) => {
      const exit = await exited(child);
      if (exit !== 0 && first === undefined && !all.aborted) {
        first = `${name} ${describeExit(exit)}`;
        stop.abort();
      }
      return exit;
    };
    const [espeakExit, opusExit] = await Promise.all([watch(espeak, 'espeak-ng'), watch(opusenc, 'opusenc')]);
    if (timeout.aborted) throw failed(`espeak-ng took longer than ${this.#timeoutMs} ms`);
    if (signal?.aborted) throw failed('speaking was cancelled');
    if (size > this.#maxBytes) throw failed(`the audio passed ${this.#maxBytes} bytes`);
    if (first !== undefined) throw failed(first);
    if (espeakExit !== 0) throw failed(`espeak-ng ${describeExit(espeakExit)}`);
    if (opusExit !== 0) throw failed(`opusenc ${describeExit(opusExit)}`);
    const ogg = Buffer.concat(chunks);
    if (!readOggOpus(ogg)) throw failed('opusenc wrote no OGG/Opus stream');
    return ogg;
  }
}

/** The exit code (a number), a signal name, or an Error the spawn failed with. */
function exited(child: ReturnType<typeof spawn>): Promise<number | string | Error> {
  return new Promise((resolve) => {
    child.once('error', (err) => resolve(err));
    child.once('close', (code, sig) => resolve(code ?? sig ?? 'unknown'));
  });
}

function describeExit(exit: number | string | Error): string {
  if (exit instanceof Error) {
    return (exit as NodeJS.ErrnoException).code === 'ENOENT' ? 'is not installed' : `failed: ${exit.message}`;
  }
  return typeof exit === 'number' ? `exited with status ${exit}` : `was killed (${exit})`;
}

function failed(message: string): AppError {
  return new AppError('TTS_FAILED', message);
}
