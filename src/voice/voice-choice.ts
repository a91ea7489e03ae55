/**
 * Each chat's `/voice` choice: `on` (every reply spoken too), `off` (never),
 * `auto` (the default: a voice note in gets a voice note back). In the daemon
 * a Redis hash `<prefix>:chat-voice` (session key → mode), without expiry,
 * like `/model`'s choices; in memory for `magpie agent`.
 */

export const VOICE_MODES = ['on', 'off', 'auto'] as const;
export type VoiceMode = (typeof VOICE_MODES)[number];

/** Where chats' voice choices live. */
export interface VoiceChoiceStore {
  /** The chat's mode; `auto` when it chose none. */
  get(sessionKey: string): Promise<VoiceMode>;
  /** Stores `mode` (`auto` removes the choice). */
  set(sessionKey: string, mode: VoiceMode): Promise<void>;
}

/** The hash commands the store needs (an ioredis client has them). */
export interface HashClient {
  hget(key: string, field: string): Promise<string | null>;
  hset(key: string, field: string, value: string): Promise<number>;
  hdel(key: string, field: string): Promise<number>;
}

/** The hash of voice choices under a bus prefix. */
export function voiceChoicesKey(prefix: string): string {
  return `${prefix}:chat-voice`;
}

/** Choices in a Redis hash, seen by every worker and kept over restarts. */
export class HashVoiceChoiceStore implements VoiceChoiceStore {
  readonly #redis: HashClient;
  readonly #key: string;

  constructor(redis: HashClient, prefix: string) {
    this.#redis = redis;
    this.#key = voiceChoicesKey(prefix);
  }

  async get(sessionKey: string): Promise<VoiceMode> {
    return asMode(await this.#redis.hget(this.#key, sessionKey));
  }

  async set(sessionKey: string, mode: VoiceMode): Promise<void> {
    if (mode === 'auto') await this.#redis.hdel(this.#key, sessionKey);
    else await this.#redis.hset(this.#key, sessionKey, mode);
  }
}

/** Choices kept in memory (one process). */
export class MemoryVoiceChoiceStore implements VoiceChoiceStore {
  readonly #choices = new Map<string, VoiceMode>();

  async get(sessionKey: string): Promise<VoiceMode> {
    return this.#choices.get(sessionKey) ?? 'auto';
  }

  async set(sessionKey: string, mode: VoiceMode): Promise<void> {
    if (mode === 'auto') this.#choices.delete(sessionKey);
    else this.#choices.set(sessionKey, mode);
  }
}

/** A stored value as a mode; anything unknown counts as `auto`. */
function asMode(value: string | null): VoiceMode {
  return (VOICE_MODES as readonly string[]).includes(value ?? '') ? (value as VoiceMode) : 'auto';
}

/**
 * Runs `/voice [on|off|auto]` and returns the reply. `speaks` is false when no engine is set
 * (MAGPIE_TTS=off): the choice is still stored, and the reply says nothing will be spoken.
 *
 * @example await runVoiceCommand('off', { sessionKey, choices, speaks: true }) // 'Voice replies are off in this chat.'
 */
export async function runVoiceCommand(
  argument: string | undefined,
  ctx: { sessionKey: string; choices: VoiceChoiceStore; speaks: boolean },
): Promise<string> {
  const wanted = (argument ?? '').trim().toLowerCase();
  const note = ctx.speaks ? '' : ' (No speech engine is set up here, MAGPIE_TTS=off: nothing is spoken yet.)';
  if (wanted === '') {
    const mode = await ctx.choices.get(ctx.sessionKey);
    return `Voice replies: ${mode} (${describe(mode)}). Change with /voice on, /voice off or /voice auto.${note}`;
  }
  if (!(VOICE_MODES as readonly string[]).includes(wanted)) {
    return 'Say /voice on, /voice off or /voice auto.';
  }
  const mode = wanted as VoiceMode;
  await ctx.choices.set(ctx.sessionKey, mode);
  return `Voice replies are ${mode} in this chat: ${describe(mode)}.${note}`;
}

function describe(mode: VoiceMode): string {
  switch (mode) {
    case 'on':
      return 'every answer is spoken too';
    case 'off':
      return 'answers are text only';
    case 'auto':
      return 'a voice message gets a spoken answer, text gets text';
  }
}
