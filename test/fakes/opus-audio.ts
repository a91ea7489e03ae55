/**
 * Real speech audio for the voice tests, made once per run by the global
 * set-up: espeak-ng speaks a phrase (WAV) and opusenc encodes it to
 * OGG/Opus — the bytes the fake /v1/audio/speech answers with and the fake
 * chat platforms receive. Also the WAV, for a browser's fake microphone.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';

/** The phrase in the audio. */
export const OPUS_PHRASE = 'Hello from magpie. This is a spoken reply.';

/** Writes `speech.wav` and `speech.ogg` into `dir`; resolves to the OGG's path. */
export async function makeOpusAudio(dir: string): Promise<string> {
  const wav = path.join(dir, 'speech.wav');
  const ogg = path.join(dir, 'speech.ogg');
  execFileSync('espeak-ng', ['-v', 'en', '-w', wav, OPUS_PHRASE], { stdio: 'ignore' });
  execFileSync('opusenc', ['--quiet', wav, ogg], { stdio: 'ignore' });
  return ogg;
}

/** The run's OGG/Opus bytes (inside a test file). */
export function opusAudio(): Buffer {
  return readFileSync(inject('opusFile'));
}

/** The run's WAV (the fake microphone's input). */
export function speechWavPath(): string {
  return inject('opusFile').replace(/\.ogg$/, '.wav');
}
