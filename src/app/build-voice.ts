/**
 * The voice side of the composition root: the configured speech engine
 * (MAGPIE_TTS), and the worker's spoken replies over the bus's Redis (the
 * chats' `/voice` choices, the totals /metrics reads) and the budget.
 */

import { CHANNELS } from '../channels/registry.js';
import type { VoiceConfig } from '../config/voice.js';
import type { Logger } from '../log/index.js';
import type { OutboundMessageInput } from '../messages/messages.js';
import type { SpeechEngine } from '../voice/engine.js';
import { EspeakEngine } from '../voice/espeak.js';
import { budgetCharges, type SpeechBudget } from '../voice/speech-budget.js';
import { type HashClient, HashVoiceChoiceStore } from '../voice/voice-choice.js';
import { VoiceReplies, type VoiceTally } from '../voice/voice-replies.js';

/**
 * The engine MAGPIE_TTS names; undefined when it is `off`. The openai SDK loads only for `endpoint`.
 *
 * @example const engine = await buildSpeechEngine(config.voice) // EspeakEngine when MAGPIE_TTS=espeak
 */
export async function buildSpeechEngine(voice: VoiceConfig): Promise<SpeechEngine | undefined> {
  if (voice.engine === 'espeak') return new EspeakEngine({ voice: voice.voice });
  if (voice.engine === 'endpoint' && voice.endpoint) {
    const { EndpointSpeechEngine } = await import('../providers/openai/speech.js');
    const { endpoint } = voice;
    return new EndpointSpeechEngine({
      baseURL: endpoint.baseURL,
      apiKey: endpoint.apiKey,
      ...(endpoint.keyVar ? { keyVar: endpoint.keyVar } : {}),
      model: endpoint.model,
      voice: voice.voice,
    });
  }
  return undefined;
}

/** What the worker's spoken replies need of the bus. */
export interface VoiceBus {
  readonly redis: HashClient & { hincrbyfloat(key: string, field: string, by: number): Promise<string> };
  readonly prefix: string;
  publishOutbound(message: OutboundMessageInput): Promise<void>;
  outboundQueued(channel: string, id: string): Promise<boolean>;
}

/** The worker's spoken replies, or undefined when MAGPIE_TTS is off. */
export async function buildVoiceReplies(options: {
  voice: VoiceConfig;
  bus: VoiceBus;
  /** The turn-totals hash /metrics reads (opsKeys.totals). */
  totalsKey: string;
  budget?: SpeechBudget;
  logger: Logger;
}): Promise<VoiceReplies | undefined> {
  const { voice, bus, logger } = options;
  const engine = await buildSpeechEngine(voice);
  if (!engine) return undefined;
  const tally: VoiceTally = {
    add: async (field, amount) => {
      await bus.redis.hincrbyfloat(options.totalsKey, field, amount);
    },
  };
  return new VoiceReplies({
    engine,
    choices: new HashVoiceChoiceStore(bus.redis, bus.prefix),
    channels: CHANNELS.filter((channel) => channel.playsAudio).map((channel) => channel.name),
    publish: (message) => bus.publishOutbound(message),
    queued: (channel, id) => bus.outboundQueued(channel, id),
    maxChars: voice.maxChars,
    tally,
    ...(options.budget
      ? {
          charges: budgetCharges(options.budget, {
            model: engine.model,
            pricePerMillionChars: voice.pricePerMillionChars,
            logger,
          }),
        }
      : {}),
    logger: logger.child({ component: 'voice' }),
  });
}
