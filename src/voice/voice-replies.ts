/**
 * Spoken replies, the worker's side: after a turn's text reply is queued
 * (final: a live preview has finished), decide from the chat's `/voice`
 * mode whether to speak it (`auto`: only when a voice note came in), make
 * the speakable text, charge it to the budget, speak it and queue a second
 * outbound under `voiceId(turn)` carrying the OGG/Opus. That id is what
 * keeps a redone turn from sending the voice twice. Nothing here throws: a
 * failure is logged and counted, and the text has already gone out.
 */
import { AppError, describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import type { InboundMessage, OutboundMessageInput } from '../messages/messages.js';
import { voiceId } from '../messages/outbound-ids.js';
import type { SpeechEngine } from './engine.js';
import { readOggOpus, waveformOf } from './ogg.js';
import { speakableText } from './speakable.js';
import type { SpeechCharges } from './speech-budget.js';
import type { VoiceChoiceStore } from './voice-choice.js';

/** The running totals /metrics reads (fields of the turn-totals hash). */
export const voiceTotalsFields = {
  seconds: 'voice:seconds',
  chars: 'voice:chars',
  failed: 'voice:failed',
} as const;

/** Where spoken seconds and failures are counted (the bus's totals hash). */
export interface VoiceTally {
  add(field: (typeof voiceTotalsFields)[keyof typeof voiceTotalsFields], amount: number): Promise<void>;
}

export interface VoiceRepliesOptions {
  engine: SpeechEngine;
  choices: VoiceChoiceStore;
  /** Queues an outbound message (the bus). */
  publish(message: OutboundMessageInput): Promise<void>;
  /**
   * Whether an outbound message `id` for `channel` is queued or sent already: a redone turn whose
   * voice went out is not spoken (nor charged) again. @defaultValue never (the id still drops the copy)
   */
  queued?(channel: string, id: string): Promise<boolean>;
  /** MAGPIE_TTS_MAX_CHARS. @defaultValue 1500 */
  maxChars?: number;
  /** Charges speech to the spending limits. @defaultValue not charged */
  charges?: SpeechCharges;
  /** Counts seconds spoken and failures. @defaultValue not counted */
  tally?: VoiceTally;
  /**
   * The channels whose senders play a spoken reply (their descriptors' `playsAudio`); a bot
   * account's instance (`telegram-family`) plays audio when its channel does.
   */
  channels: readonly string[];
  logger: Logger;
}

/** A queued text reply, as the worker made it. */
export interface SpokenReplyRequest {
  turn: string;
  sessionKey: string;
  /** The messages the turn answered (a voice note among them: `auto` speaks). */
  batch: readonly InboundMessage[];
  target: Pick<OutboundMessageInput, 'channel' | 'chatId' | 'threadId' | 'replyTo'>;
  /** The reply's Markdown. */
  content: string;
  metadata: Record<string, unknown>;
  /** How the turn ended: only `ok` answers are spoken (not commands, stops or limits). @defaultValue 'ok' */
  outcome?: string;
}

/** What happened: spoken (queued), or why not. */
export type SpokenReplyOutcome =
  | { spoken: true; seconds: number; chars: number }
  | { spoken: false; reason: 'mode' | 'channel' | 'empty' | 'budget' | 'failed' | 'sent' };

/**
 * Whether the turn's request asked for the spoken answer itself: `metadata.voice` on a CLI message
 * (`magpie send --voice`). Only the CLI client sets it; chat platforms' adapters build their own
 * metadata, so nobody in a chat can.
 */
function asked(request: SpokenReplyRequest): boolean {
  return (
    request.target.channel === 'cli' &&
    request.batch.some((m) => m.channel === 'cli' && m.metadata.voice === true)
  );
}

export class VoiceReplies {
  readonly #o: VoiceRepliesOptions;
  readonly #channels: ReadonlySet<string>;
  readonly #maxChars: number;

  constructor(options: VoiceRepliesOptions) {
    this.#o = options;
    this.#channels = new Set(options.channels);
    this.#maxChars = options.maxChars ?? 1500;
    if (!Number.isInteger(this.#maxChars) || this.#maxChars < 1)
      throw new RangeError('maxChars must be at least 1');
  }
  /** Whether `channel` (or, for a bot account's `<channel>-<account>`, its channel) plays audio. */
  #playsAudio(channel: string): boolean {
    return this.#channels.has(channel) || this.#channels.has(channel.split('-')[0]!);
  }

  /** Whether `request`'s chat wants this reply spoken. */
  async wanted(request: SpokenReplyRequest): Promise<boolean> {
    if (!this.#playsAudio(request.target.channel)) return false;
    if (asked(request)) return true;
    const mode = await this.#o.choices.get(request.sessionKey);
    if (mode === 'off') return false;
    if (mode === 'on') return true;
    return request.batch.some((m) => m.media.some((media) => media.kind === 'audio'));
  }

  /** Speaks the reply when the chat wants it and queues the audio; never throws. */
  async afterReply(request: SpokenReplyRequest, signal?: AbortSignal): Promise<SpokenReplyOutcome> {
    const log = this.#o.logger.child({ session: request.sessionKey, turn: request.turn });
    try {
      if (!this.#playsAudio(request.target.channel)) return { spoken: false, reason: 'channel' };
      if (!(await this.wanted(request))) return { spoken: false, reason: 'mode' };
      if ((request.outcome ?? 'ok') !== 'ok') {
        return await this.#notSpoken(
          request,
          'empty',
          `the turn ended without an answer to speak (${request.outcome})`,
        );
      }
      if (await this.#o.queued?.(request.target.channel, voiceId(request.turn))) {
        log.info('reply not spoken again: its voice went out before (a redone turn)');
        return { spoken: false, reason: 'sent' };
      }
      const text = speakableText(request.content, this.#maxChars);
      if (text === '') return await this.#notSpoken(request, 'empty', 'the answer has nothing to say aloud');
      const held = await this.#o.charges?.hold(request.sessionKey, text.length);
      if (held && !held.ok) {
        log.info({ limit: held.limit }, 'reply not spoken: a spending limit is reached');
        return await this.#notSpoken(request, 'budget', `a spending limit (${held.limit}) is reached`);
      }
      let ogg: Buffer;
      try {
        ogg = await this.#o.engine.speak(text, signal);
      } catch (err) {
        await held?.settle(false);
        throw err;
      }
      await held?.settle(true);
      const info = readOggOpus(ogg);
      if (!info) throw new AppError('TTS_FAILED', 'the engine returned no OGG/Opus audio');
      const seconds = Math.round(info.durationSeconds * 100) / 100;
      await this.#o.publish({
        ...request.target,
        id: voiceId(request.turn),
        content: '',
        kind: 'reply',
        media: [
          {
            kind: 'audio',
            mimeType: 'audio/ogg',
            name: 'reply.ogg',
            size: ogg.length,
            dataUrl: `data:audio/ogg;base64,${ogg.toString('base64')}`,
            durationSeconds: seconds,
            waveform: Buffer.from(waveformOf(info)).toString('base64'),
          },
        ],
        metadata: { ...request.metadata, spoken: text },
      });
      await this.#count(voiceTotalsFields.seconds, seconds, log);
      await this.#count(voiceTotalsFields.chars, text.length, log);
      log.info({ engine: this.#o.engine.name, seconds, chars: text.length }, 'reply spoken');
      return { spoken: true, seconds, chars: text.length };
    } catch (err) {
      log.warn(
        { engine: this.#o.engine.name, err: describeError(err) },
        'reply not spoken; the text went out alone',
      );
      await this.#count(voiceTotalsFields.failed, 1, log);
      return await this.#notSpoken(request, 'failed', describeError(err)).catch(() => ({
        spoken: false as const,
        reason: 'failed' as const,
      }));
    }
  }

  /**
   * A reply not spoken. A client that asked for the voice (`magpie send --voice`) is told why,
   * under the voice's id, instead of waiting for audio that will not come.
   */
  async #notSpoken(
    request: SpokenReplyRequest,
    reason: 'empty' | 'budget' | 'failed',
    why: string,
  ): Promise<SpokenReplyOutcome> {
    if (asked(request)) {
      await this.#o.publish({
        ...request.target,
        id: voiceId(request.turn),
        content: '',
        kind: 'reply',
        metadata: { ...request.metadata, voiceFailed: why },
      });
    }
    return { spoken: false, reason };
  }

  async #count(
    field: (typeof voiceTotalsFields)[keyof typeof voiceTotalsFields],
    amount: number,
    log: Logger,
  ) {
    await this.#o.tally?.add(field, amount).catch((err: unknown) => {
      log.debug({ err: describeError(err) }, 'voice figures not counted');
    });
  }
}
