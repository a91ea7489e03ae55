/**
 * `--voice FILE` of `magpie send` and `magpie agent`: the spoken answer
 * written to a file, whole or not at all (a temporary file renamed), and
 * the flag checked before anything runs (an engine must be configured).
 */
import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { VoiceConfig } from '../config/voice.js';
import { AppError, ConfigError } from '../errors/index.js';
import type { SpeechEngine } from './engine.js';

/**
 * The absolute path `--voice` names, checked: MAGPIE_TTS must name an engine.
 * @throws ConfigError (exit 2) naming the command and the fix.
 */
export function voiceFileFlag(
  command: string,
  file: string | undefined,
  voice: VoiceConfig,
): string | undefined {
  if (file === undefined) return undefined;
  if (file.trim() === '')
    throw new ConfigError(`magpie ${command}: --voice needs a file name, e.g. --voice answer.ogg`);
  if (voice.engine === 'off') {
    throw new ConfigError(
      `magpie ${command}: --voice needs a speech engine: set MAGPIE_TTS=espeak (offline) or MAGPIE_TTS=endpoint in .env`,
    );
  }
  return path.resolve(file);
}

/** Writes `bytes` to `file` atomically. */
export async function writeVoiceFile(file: string, bytes: Buffer): Promise<void> {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temp, bytes);
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

/**
 * Speaks `reply` (made for the ear, at most `maxChars`: MAGPIE_TTS_MAX_CHARS) with `engine` and
 * writes the OGG/Opus to `file`; resolves to its length in bytes.
 * @throws AppError TTS_FAILED when there is nothing to say or the engine failed (nothing is written).
 */
export async function speakToFile(
  reply: string,
  file: string,
  engine: SpeechEngine,
  maxChars: number,
): Promise<number> {
  // Loaded here, not on import: speakable.ts brings marked, which `magpie agent` without --voice never needs.
  const { speakableText } = await import('./speakable.js');
  const text = speakableText(reply, maxChars);
  if (text === '') throw new AppError('TTS_FAILED', 'the answer has nothing to say aloud');
  const ogg = await engine.speak(text);
  await writeVoiceFile(file, ogg);
  return ogg.length;
}
