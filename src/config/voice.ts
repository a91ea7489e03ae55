/**
 * Spoken replies (MAGPIE_TTS*): which engine speaks, its model and voice,
 * how much of a reply is spoken and what a million characters cost.
 * MAGPIE_TTS_MODEL is a MAGPIE_FALLBACK_MODELS entry (`model[@url][#KEY_VAR]`):
 * the main endpoint and key unless it names its own.
 */
import type { z } from 'zod';
import { ConfigError } from '../errors/index.js';
import { choice, optionalText, positiveInt } from './env-values.js';
import { type ModelEndpointConfig, type PrimaryEndpoint, parseModelEntry } from './fallback-models.js';
import { priceSchema } from './usage.js';

export const TTS_ENGINES = ['off', 'endpoint', 'espeak'] as const;
export type TtsEngineName = (typeof TTS_ENGINES)[number];

/** espeak-ng voice names: a language (`en`, `en-us`), optionally `+variant` (`en+f3`). */
export const ESPEAK_VOICE_PATTERN = /^[a-z]{2,3}(?:-[a-z0-9]{1,8}){0,2}(?:\+[a-z0-9]{1,12})?$/i;
/** Endpoint voice names (`alloy`, `af_heart`): letters, digits, `_`, `-`, `.`. */
const ENDPOINT_VOICE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export const VOICE_ENV = {
  MAGPIE_TTS: choice(TTS_ENGINES, 'off'),
  MAGPIE_TTS_MODEL: optionalText,
  MAGPIE_TTS_VOICE: optionalText,
  MAGPIE_TTS_MAX_CHARS: positiveInt(1500),
  MAGPIE_PRICE_TTS: priceSchema,
};

export interface VoiceConfig {
  /** MAGPIE_TTS. @defaultValue 'off' */
  engine: TtsEngineName;
  /** The speech endpoint and model (engine `endpoint`). */
  endpoint: Omit<ModelEndpointConfig, 'id'> | undefined;
  /** MAGPIE_TTS_VOICE: `alloy` for endpoints, `en` for espeak-ng unless set. */
  voice: string;
  /** MAGPIE_TTS_MAX_CHARS: the most of a reply spoken. @defaultValue 1500 */
  maxChars: number;
  /** MAGPIE_PRICE_TTS: per million characters spoken; undefined: speech is not priced. */
  pricePerMillionChars: number | undefined;
}

type VoiceEnv = { [K in keyof typeof VOICE_ENV]: z.infer<(typeof VOICE_ENV)[K]> };

/**
 * The voice settings.
 * @throws ConfigError (exit 2) for a voice name that does not fit the engine, or a bad model entry.
 */
export function voiceConfig(
  e: VoiceEnv,
  primary: PrimaryEndpoint,
  env: NodeJS.ProcessEnv,
  needKeys: boolean,
): VoiceConfig {
  const engine = e.MAGPIE_TTS;
  const voice = e.MAGPIE_TTS_VOICE ?? (engine === 'espeak' ? 'en' : 'alloy');
  if (engine === 'espeak' && !ESPEAK_VOICE_PATTERN.test(voice)) {
    throw new ConfigError(
      `MAGPIE_TTS_VOICE "${voice.slice(0, 40)}" is not an espeak-ng voice (e.g. en, en-us, de+f3): see espeak-ng --voices`,
    );
  }
  if (engine === 'endpoint' && !ENDPOINT_VOICE_PATTERN.test(voice)) {
    throw new ConfigError(
      `MAGPIE_TTS_VOICE "${voice.slice(0, 40)}" is not a voice name (letters, digits, _ - .; e.g. alloy)`,
    );
  }
  const endpoint =
    engine === 'endpoint'
      ? parseModelEntry(e.MAGPIE_TTS_MODEL ?? 'tts-1', primary, env, needKeys, 'MAGPIE_TTS_MODEL')
      : undefined;
  return {
    engine,
    endpoint,
    voice,
    maxChars: e.MAGPIE_TTS_MAX_CHARS,
    pricePerMillionChars: e.MAGPIE_PRICE_TTS,
  };
}
