/**
 * Sending to Telegram: Markdown is split, rendered to HTML and re-split until
 * every part fits 4096; each part is sent with `parse_mode: 'HTML'`, falling
 * back to plain text when Telegram cannot parse it. 429 waits `retry_after`,
 * 5xx and network errors back off, permanent refusals become DELIVERY_PERMANENT.
 * A message's actions are an inline keyboard under its last part.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type Telegram, TelegramError } from 'telegraf';
import { AppError, describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { OutboundAction } from '../../messages/messages.js';
import { capParts, MAX_REPLY_PARTS, splitMessage } from '../chunk.js';
import { escapeHtml, toTelegramHtml } from '../format/telegram-html.js';

/** Telegram's limit for one message, counted after formatting. */
export const TELEGRAM_TEXT_LIMIT = 4096;

/** One message to send: the HTML and, for the fallback, the Markdown it came from. */
export interface FormattedPart {
  html: string;
  plain: string;
}

/**
 * Splits Markdown into parts whose rendered HTML fits `limit`. The Markdown is
 * split first (at `markdownLimit`, so fences are closed and reopened), each part
 * rendered; a rendered part still too long is split again from its Markdown.
 * At most MAX_REPLY_PARTS parts: a longer reply is cut with a notice (chunk.ts).
 */
export function formatForTelegram(
  markdown: string,
  options: { limit?: number; markdownLimit?: number } = {},
): FormattedPart[] {
  const limit = options.limit ?? TELEGRAM_TEXT_LIMIT;
  const markdownLimit = Math.min(options.markdownLimit ?? 3500, limit);
  const out: FormattedPart[] = [];
  const render = (text: string, size: number) => {
    for (const part of splitMessage(text, size)) {
      const html = toTelegramHtml(part);
      if (html.length <= limit) {
        out.push({ html: html === '' ? escapeHtml(part.trim()) : html, plain: part });
      } else if (size > 200 && part.length > 1) {
        render(part, Math.max(Math.floor(Math.min(size, part.length) / 2), 100));
      } else {
        // Pathological (almost every character escaped): send escaped text in safe slices.
        for (const slice of splitMessage(part, Math.floor(limit / 5))) {
          out.push({ html: escapeHtml(slice), plain: slice });
        }
      }
    }
  };
  // Only what can be sent is rendered: a reply past MAX_REPLY_PARTS is cut, and rendering all of a
  // long one (each part through the Markdown lexer) took seconds for a megabyte of `*_`.
  const pieces = splitMessage(markdown, markdownLimit);
  let rendered = 0;
  while (rendered < pieces.length && out.length <= MAX_REPLY_PARTS)
    render(pieces[rendered++]!, markdownLimit);
  return capParts(
    out,
    (notice) => ({ html: escapeHtml(notice), plain: notice }),
    markdown.length,
    MAX_REPLY_PARTS,
    out.length + pieces.length - rendered,
  );
}

export interface SenderOptions {
  telegram: Telegram;
  logger: Logger;
  /** Attempts per part for 429/5xx/network errors. @defaultValue 6 */
  maxAttempts?: number;
  /** First backoff delay; doubles each attempt. @defaultValue 500 */
  baseDelayMs?: number;
  /** Largest backoff delay (a 429's `retry_after` is always honoured in full). @defaultValue 30000 */
  maxDelayMs?: number;
}

/** Where a part goes. */
export interface Target {
  chatId: string;
  threadId?: string;
  /** Platform message id to reply to (first part only). */
  replyTo?: string;
}

/**
 * The sendMessage options every new message shares: in the target's thread,
 * a reply to `replyTo` when there is one (sent even if that message is gone),
 * link previews off.
 */
export function placement(target: Target) {
  return {
    ...(target.threadId ? { message_thread_id: Number(target.threadId) } : {}),
    ...(target.replyTo
      ? { reply_parameters: { message_id: Number(target.replyTo), allow_sending_without_reply: true } }
      : {}),
    link_preview_options: { is_disabled: true },
  };
}

/** An inline keyboard (`reply_markup`): rows of buttons whose press comes back as a callback query. */
export interface InlineKeyboard {
  inline_keyboard: Array<Array<{ text: string; callback_data: string }>>;
}

/** A message's actions as one row of buttons, each carrying its command as `callback_data` (≤ 64 bytes). */
export function inlineKeyboard(actions: readonly OutboundAction[]): InlineKeyboard {
  return { inline_keyboard: [actions.map((a) => ({ text: a.label, callback_data: a.command }))] };
}

/** The `reply_markup` of a part: the actions' keyboard when there are any. */
export function buttonsMarkup(actions: readonly OutboundAction[] | undefined) {
  return actions && actions.length > 0 ? { reply_markup: inlineKeyboard(actions) } : {};
}

/** Sends parts with retries; see the file header for the rules. */
export class TelegramSender {
  private readonly maxAttempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(private readonly options: SenderOptions) {
    this.maxAttempts = options.maxAttempts ?? 6;
    this.baseDelayMs = options.baseDelayMs ?? 500;
    this.maxDelayMs = options.maxDelayMs ?? 30_000;
    if (this.maxAttempts < 1) throw new RangeError('maxAttempts must be at least 1');
  }

  /**
   * Sends one formatted part, with `actions` as buttons under it; resolves with the new message's
   * id. Throws AppError DELIVERY_PERMANENT (chat not found, bot blocked…) or DELIVERY_TRANSIENT
   * (attempts used up).
   */
  async sendPart(target: Target, part: FormattedPart, actions?: readonly OutboundAction[]): Promise<string> {
    let html = true;
    for (let attempt = 1; ; attempt++) {
      try {
        const sent = await this.options.telegram.sendMessage(target.chatId, html ? part.html : part.plain, {
          ...(html ? { parse_mode: 'HTML' as const } : {}),
          ...placement(target),
          ...buttonsMarkup(actions),
        });
        return String(sent.message_id);
      } catch (err) {
        if (html && isParseError(err)) {
          this.options.logger.warn(
            { chatId: target.chatId, err: describeError(err) },
            'Telegram rejected the HTML; sending the part as plain text',
          );
          html = false;
          attempt--;
          continue;
        }
        const wait = this.retryDelay(err, attempt);
        if (wait === undefined) {
          throw new AppError('DELIVERY_PERMANENT', `Telegram refused the message: ${describeError(err)}`, {
            cause: err,
          });
        }
        if (attempt >= this.maxAttempts) {
          const { retryAfterMs } = classifyTelegramError(err);
          throw new AppError(
            'DELIVERY_TRANSIENT',
            `Telegram did not accept the message after ${attempt} attempts: ${describeError(err)}`,
            { cause: err, transient: true, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) },
          );
        }
        this.options.logger.warn(
          { chatId: target.chatId, attempt, waitMs: wait, err: describeError(err) },
          'Telegram send failed; retrying',
        );
        await sleep(wait);
      }
    }
  }

  /**
   * Sends a voice note (OGG/Opus) with its length in seconds, with the same retries as a part.
   * Throws like {@link sendPart}.
   */
  async sendVoice(target: Target, ogg: Buffer, durationSeconds: number | undefined): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      try {
        const { link_preview_options: _noPreview, ...where } = placement(target);
        const sent = await this.options.telegram.sendVoice(
          target.chatId,
          { source: ogg, filename: 'reply.ogg' },
          {
            ...where,
            ...(durationSeconds !== undefined ? { duration: Math.max(1, Math.round(durationSeconds)) } : {}),
          },
        );
        return String(sent.message_id);
      } catch (err) {
        const wait = this.retryDelay(err, attempt);
        if (wait === undefined) {
          throw new AppError('DELIVERY_PERMANENT', `Telegram refused the voice note: ${describeError(err)}`, {
            cause: err,
          });
        }
        if (attempt >= this.maxAttempts) {
          throw new AppError(
            'DELIVERY_TRANSIENT',
            `Telegram did not accept the voice note after ${attempt} attempts: ${describeError(err)}`,
            { cause: err, transient: true },
          );
        }
        this.options.logger.warn(
          { chatId: target.chatId, attempt, waitMs: wait, err: describeError(err) },
          'Telegram voice note failed; retrying',
        );
        await sleep(wait);
      }
    }
  }

  /** Sends plain text (pairing codes, short notices) with the same retries. */
  async sendPlain(chatId: string, text: string, threadId?: string): Promise<void> {
    await this.sendPart(
      { chatId, ...(threadId ? { threadId } : {}) },
      { html: escapeHtml(text), plain: text },
    );
  }

  /** Milliseconds to wait before the next attempt, or undefined when retrying cannot help. */
  private retryDelay(err: unknown, attempt: number): number | undefined {
    const { transient, retryAfterMs } = classifyTelegramError(err);
    if (!transient) return undefined;
    return retryAfterMs ?? Math.min(this.baseDelayMs * 2 ** (attempt - 1), this.maxDelayMs);
  }
}

/** How a failed Bot API call should be treated. */
export interface TelegramFailure {
  /** True when trying again may succeed (429, 5xx, network); false for refusals no retry fixes. */
  transient: boolean;
  /** The wait a 429 asked for (its `retry_after`, in ms), when it gave one. */
  retryAfterMs?: number;
}

/**
 * Classifies a telegraf failure: a 429 is transient with its `retry_after`, a 5xx
 * or anything that is not a TelegramError (the network: resets, time-outs) is
 * transient, every other API error (400, 403…) is permanent.
 */
export function classifyTelegramError(err: unknown): TelegramFailure {
  if (err instanceof TelegramError) {
    if (err.code === 429) {
      const after = err.parameters?.retry_after;
      return after !== undefined ? { transient: true, retryAfterMs: after * 1000 } : { transient: true };
    }
    return { transient: err.code >= 500 };
  }
  return { transient: true };
}

/** Telegram's answer to HTML it cannot parse (a 400 whose only marker is its description). */
export function isParseError(err: unknown): boolean {
  return err instanceof TelegramError && err.code === 400 && /can't parse entities/i.test(err.description);
}
