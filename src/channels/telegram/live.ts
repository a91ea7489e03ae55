/**
 * Telegram's half of live replies (the LiveSurface the shared renderer drives):
 * plain-text sendMessage / editMessageText while an answer is written, the final
 * HTML (with the plain fallback TelegramSender uses) once it is complete, and
 * deleteMessage for preview parts the final reply no longer needs. The final
 * part's buttons ride on its edit or post (an edit without `reply_markup`
 * would drop a message's inline keyboard). One attempt
 * per call: a 429 becomes DELIVERY_TRANSIENT carrying its retry_after (the
 * renderer, which throttles, decides when to try again) — only postFinal goes
 * through TelegramSender and its retries, as a whole reply would.
 */
import { type Telegram, TelegramError } from 'telegraf';
import { AppError, describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { OutboundAction } from '../../messages/messages.js';
import type { LiveSurface, LiveTarget } from '../live/surface.js';
import {
  buttonsMarkup,
  classifyTelegramError,
  type FormattedPart,
  formatForTelegram,
  isParseError,
  placement,
  TELEGRAM_TEXT_LIMIT,
  type TelegramSender,
} from './sender.js';

export interface TelegramLiveSurfaceOptions {
  telegram: Telegram;
  /** Sends final parts posted as new messages (its retries and HTML fallback). */
  sender: TelegramSender;
  logger: Logger;
  /** Least time between two edits in one chat (Telegram allows about one per second). @defaultValue 1000 */
  editIntervalMs?: number;
}

/** Telegram's answer to an edit that changes nothing: success for us. */
const NOT_MODIFIED = /message is not modified/i;
/** Telegram's answer to deleting a message that is already gone: success for us. */
const DELETE_NOT_FOUND = /message to delete not found/i;

/** Edits and posts replies in place on Telegram; see the file header. */
export class TelegramLiveSurface implements LiveSurface<FormattedPart> {
  readonly limit = TELEGRAM_TEXT_LIMIT;
  readonly editIntervalMs: number;

  constructor(private readonly options: TelegramLiveSurfaceOptions) {
    this.editIntervalMs = options.editIntervalMs ?? 1000;
    if (!Number.isFinite(this.editIntervalMs) || this.editIntervalMs < 0) {
      throw new RangeError(`editIntervalMs must be a non-negative number, got ${this.editIntervalMs}`);
    }
  }

  /** Sends plain text (no parse mode, link previews off). `key` is unused: the Bot API has no nonce. */
  async post(target: LiveTarget, text: string, _key: string): Promise<string> {
    try {
      const sent = await this.options.telegram.sendMessage(target.chatId, text, placement(target));
      return String(sent.message_id);
    } catch (err) {
      throw deliveryError(err, `post to chat ${target.chatId}`);
    }
  }

  /** Replaces the message's text with plain text; "message is not modified" resolves. */
  async edit(target: LiveTarget, messageId: string, text: string): Promise<void> {
    await this.editText(target, messageId, text, false);
  }

  /** The final reply as TelegramChannel.send splits and renders it. */
  finalParts(content: string): FormattedPart[] {
    return formatForTelegram(content);
  }

  /**
   * Edits the message into the part's HTML (when Telegram cannot parse it, into its plain text),
   * with `actions` as its inline keyboard.
   */
  async editFinal(
    target: LiveTarget,
    messageId: string,
    part: FormattedPart,
    actions?: readonly OutboundAction[],
  ): Promise<void> {
    try {
      await this.editText(target, messageId, part.html, true, actions);
    } catch (err) {
      if (!(err instanceof AppError) || !isParseError(err.cause)) throw err;
      this.options.logger.warn(
        { chatId: target.chatId, messageId, err: describeError(err.cause) },
        'Telegram rejected the HTML of a final edit; editing to plain text',
      );
      await this.editText(target, messageId, part.plain, false, actions);
    }
  }

  /** Sends one final part through TelegramSender (retries, HTML fallback); `key` is unused. */
  postFinal(
    target: LiveTarget,
    part: FormattedPart,
    _key: string,
    actions?: readonly OutboundAction[],
  ): Promise<string> {
    return this.options.sender.sendPart(target, part, actions);
  }

  /** Deletes the message; one that is already gone resolves. */
  async remove(target: LiveTarget, messageId: string): Promise<void> {
    try {
      await this.options.telegram.deleteMessage(target.chatId, toMessageId(messageId));
    } catch (err) {
      if (err instanceof TelegramError && err.code === 400 && DELETE_NOT_FOUND.test(err.description)) return;
      throw deliveryError(err, `delete message ${messageId} in chat ${target.chatId}`);
    }
  }

  private async editText(
    target: LiveTarget,
    messageId: string,
    text: string,
    html: boolean,
    actions?: readonly OutboundAction[],
  ): Promise<void> {
    try {
      await this.options.telegram.editMessageText(target.chatId, toMessageId(messageId), undefined, text, {
        ...(html ? { parse_mode: 'HTML' as const } : {}),
        link_preview_options: { is_disabled: true },
        ...buttonsMarkup(actions),
      });
    } catch (err) {
      if (err instanceof TelegramError && err.code === 400 && NOT_MODIFIED.test(err.description)) return;
      throw deliveryError(err, `edit message ${messageId} in chat ${target.chatId}`);
    }
  }
}

/** A Bot API message id from a live record; anything else is a bug upstream, refused for good. */
function toMessageId(messageId: string): number {
  const id = Number(messageId);
  if (!/^\d+$/.test(messageId) || !Number.isSafeInteger(id) || id < 1) {
    throw new AppError('DELIVERY_PERMANENT', `not a Telegram message id: ${JSON.stringify(messageId)}`);
  }
  return id;
}

/** A failed call as DELIVERY_PERMANENT or DELIVERY_TRANSIENT (with the 429's wait). */
function deliveryError(err: unknown, what: string): AppError {
  if (err instanceof AppError) return err;
  const { transient, retryAfterMs } = classifyTelegramError(err);
  return new AppError(
    transient ? 'DELIVERY_TRANSIENT' : 'DELIVERY_PERMANENT',
    `Telegram ${transient ? 'did not accept' : 'refused'} the ${what}: ${describeError(err)}`,
    { cause: err, transient, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) },
  );
}
