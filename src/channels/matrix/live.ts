/**
 * Matrix's half of live replies (the LiveSurface the shared renderer drives):
 * a preview is sent as plain text, grown by `m.replace` edits (the new
 * content in `m.new_content`, a `* ` fallback in `body` as the spec asks),
 * and edited into the final HTML parts; a preview part no longer needed is
 * redacted. Posts carry a transaction id from the renderer's key, so a
 * retried post shows once.
 */
import { splitReply } from '../chunk.js';
import type { LiveSurface, LiveTarget } from '../live/surface.js';
import { htmlContent, plainContent } from './format.js';
import {
  inThread,
  MATRIX_TEXT_LIMIT,
  type MatrixOutbox,
  sendContent,
  toDeliveryError,
  txnId,
} from './sender.js';

export interface MatrixLiveSurfaceOptions {
  /** Where posts and edits go (encrypted in an encrypted room; redactions never are). */
  out: MatrixOutbox;
  /** Least time between two edits of one reply (homeservers rate-limit sends). @defaultValue 1500 */
  editIntervalMs?: number;
}

/** Edits replies in place on Matrix; see the file header. */
export class MatrixLiveSurface implements LiveSurface<string> {
  readonly limit = MATRIX_TEXT_LIMIT;
  readonly editIntervalMs: number;
  private readonly out: MatrixOutbox;
  private edits = 0;

  constructor(options: MatrixLiveSurfaceOptions) {
    this.out = options.out;
    this.editIntervalMs = options.editIntervalMs ?? 1500;
    if (!Number.isFinite(this.editIntervalMs) || this.editIntervalMs < 0)
      throw new RangeError(`editIntervalMs must be a non-negative number, got ${this.editIntervalMs}`);
  }

  post(target: LiveTarget, text: string, key: string): Promise<string> {
    return sendContent(this.out, target, inThread(plainContent(text), target), key);
  }

  async edit(target: LiveTarget, messageId: string, text: string): Promise<void> {
    await this.replace(target, messageId, plainContent(text));
  }

  finalParts(content: string): string[] {
    return splitReply(content, MATRIX_TEXT_LIMIT);
  }

  async editFinal(target: LiveTarget, messageId: string, part: string): Promise<void> {
    await this.replace(target, messageId, htmlContent(part));
  }

  postFinal(target: LiveTarget, part: string, key: string): Promise<string> {
    return sendContent(this.out, target, inThread(htmlContent(part), target), key);
  }

  async remove(target: LiveTarget, messageId: string): Promise<void> {
    try {
      await this.out.client.redactEvent(target.chatId, messageId, txnId(`redact:${messageId}`));
    } catch (err) {
      throw toDeliveryError(err, target.chatId);
    }
  }

  /** An `m.replace` edit of `messageId` to `content`. */
  private async replace(
    target: LiveTarget,
    messageId: string,
    content: { msgtype: string; body: string } & Record<string, unknown>,
  ): Promise<void> {
    const edit: Record<string, unknown> = {
      msgtype: content.msgtype,
      body: `* ${content.body}`,
      'm.new_content': content,
      'm.relates_to': { rel_type: 'm.replace', event_id: messageId },
    };
    if (typeof content['formatted_body'] === 'string') {
      edit['format'] = content['format'];
      edit['formatted_body'] = `* ${content['formatted_body']}`;
    }
    this.edits++;
    await sendContent(this.out, target, edit, `edit:${messageId}:${this.edits}:${Date.now()}`);
  }
}
