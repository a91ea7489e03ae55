/**
 * What an edit-capable channel (Telegram, Discord, and later ones) offers the
 * shared live renderer (renderer.ts): post a message, edit it, delete it, in
 * two forms — plain text while an answer is being written (half-written
 * Markdown never reaches a parser), and the channel's final formatting once
 * the reply is complete. The renderer decides when and what; the surface only
 * speaks the platform's API.
 */
import type { LiveRecord } from '../../messages/live-update.js';
import type { OutboundAction } from '../../messages/messages.js';

/** Where a live message goes. */
export interface LiveTarget {
  chatId: string;
  threadId?: string;
  /** Platform message id the first message replies to. */
  replyTo?: string;
}

/**
 * One platform's way of showing an answer in place. `P` is a final part as
 * the channel's `send` would post it (Telegram: HTML with its plain fallback;
 * Discord: Markdown text).
 *
 * Every method throws AppError DELIVERY_PERMANENT when the platform refuses
 * for good (message deleted, too old to edit, chat gone) and
 * DELIVERY_TRANSIENT otherwise (rate-limited, network); an edit whose text is
 * what the message already shows resolves (Telegram's "message is not
 * modified" is success).
 */
export interface LiveSurface<P> {
  /** Longest plain text one message may hold while streaming (characters). */
  readonly limit: number;
  /** Least time between two edits in one chat (ms): Telegram about 1000, Discord 1000 (5 per 5 s). */
  readonly editIntervalMs: number;
  /**
   * Posts plain text; resolves with the platform message id. `key` is
   * deterministic per turn and part (a nonce where the platform has one, so a
   * retried post does not appear twice).
   */
  post(target: LiveTarget, text: string, key: string): Promise<string>;
  /** Replaces a posted message's text with plain text. */
  edit(target: LiveTarget, messageId: string, text: string): Promise<void>;
  /** The final reply split as the channel's `send` splits it (fences closed and reopened). */
  finalParts(content: string): P[];
  /**
   * Turns a posted message into one final part (formatted; the channel's own fallback if
   * refused), with `actions` as buttons under it (the reply's last part carries its actions).
   */
  editFinal(
    target: LiveTarget,
    messageId: string,
    part: P,
    actions?: readonly OutboundAction[],
  ): Promise<void>;
  /** Posts one final part as a new message, with `actions` as buttons under it; resolves with its id. */
  postFinal(target: LiveTarget, part: P, key: string, actions?: readonly OutboundAction[]): Promise<string>;
  /** Deletes a posted message (a preview part the final reply no longer needs). */
  remove(target: LiveTarget, messageId: string): Promise<void>;
}

/** Where live records are kept (the bus implements it with expiring keys). */
export interface LiveRecords {
  get(channel: string, turn: string): Promise<LiveRecord | undefined>;
  put(channel: string, turn: string, record: LiveRecord): Promise<void>;
}

/** LiveRecords in this process's memory (a channel whose bus keeps none; tests). */
export class MemoryLiveRecords implements LiveRecords {
  readonly #records = new Map<string, LiveRecord>();

  async get(channel: string, turn: string): Promise<LiveRecord | undefined> {
    return this.#records.get(`${channel}:${turn}`);
  }

  async put(channel: string, turn: string, record: LiveRecord): Promise<void> {
    this.#records.set(`${channel}:${turn}`, record);
  }
}
