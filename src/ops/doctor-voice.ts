/**
 * The doctor's voice check: which engine speaks (MAGPIE_TTS), and whether it
 * can — espeak-ng and opusenc installed for `espeak`; with --live one short
 * phrase spoken by the engine and checked to be OGG/Opus (its length shown).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { VoiceConfig } from '../config/voice.js';
import { describeError } from '../errors/index.js';
import type { SpeechEngine } from '../voice/engine.js';
import { readOggOpus } from '../voice/ogg.js';
import { type Check, failed, pass, skipped } from './doctor.js';

const run = promisify(execFile);
/** What --live speaks. */
export const LIVE_PHRASE = 'magpie can speak.';

/** The voice check (skipped when MAGPIE_TTS=off). */
export function voiceCheck(
  voice: VoiceConfig,
  live: boolean,
  makeEngine: (voice: VoiceConfig) => Promise<SpeechEngine | undefined>,
): Check {
  return {
    name: 'voice',
    timeoutMs: 30_000,
    async run(signal) {
      if (voice.engine === 'off') return skipped('spoken replies off (MAGPIE_TTS=off)');
      const where =
        voice.engine === 'espeak'
          ? `espeak-ng, voice ${voice.voice}`
          : `${voice.endpoint?.model} at ${voice.endpoint?.baseURL}, voice ${voice.voice}`;
      if (voice.engine === 'espeak') {
        for (const [program, pkg] of [
          ['espeak-ng', 'espeak-ng'],
          ['opusenc', 'opus-tools'],
        ] as const) {
          const found = await run(program, ['--version'], { signal }).then(
            () => true,
            () => false,
          );
          if (!found) return failed(`${program} is not installed`, `sudo apt-get install ${pkg}`);
        }
      }
      if (!live) return pass(`${where} (--live speaks a phrase)`);
      try {
        const engine = await makeEngine(voice);
        if (!engine) return failed(`${where}: no engine was built`, 'check MAGPIE_TTS');
        const ogg = await engine.speak(LIVE_PHRASE, signal);
        const seconds = readOggOpus(ogg)?.durationSeconds ?? 0;
        return pass(`${where}: spoke "${LIVE_PHRASE}" (${seconds.toFixed(1)} s of OGG/Opus)`);
      } catch (err) {
        const fix =
          voice.engine === 'espeak'
            ? 'check MAGPIE_TTS_VOICE against `espeak-ng --voices`'
            : 'check MAGPIE_TTS_MODEL, MAGPIE_TTS_VOICE and that the endpoint serves /v1/audio/speech';
        return failed(`${where}: ${describeError(err)}`, fix);
      }
    },
  };
}
