/**
 * Slack's half of live replies (the LiveSurface the shared renderer drives):
 * a preview is posted as plain text (escaped, `mrkdwn: false`) with
 * chat.postMessage, grown with chat.update, and turned into the final mrkdwn
 * parts (the last with the reply's buttons); a preview part no longer needed
 * is deleted with chat.delete. Slack has no idempotency key for a post, so a
 * post retried after a lost answer may show twice. Errors are classified by
 * sender.ts (a 429 carries its Retry-After, which the renderer waits out).
 */
import type { webApi } from '@slack/bolt';
import { AppError } from '../../errors/index.js';
import type { OutboundAction } from '../../messages/messages.js';
import { escapeMrkdwn } from '../format/slack-mrkdwn.js';
import type { LiveSurface, LiveTarget } from '../live/surface.js';
import { blocksWith } from './buttons.js';
import { postArgs, SLACK_TEXT_LIMIT, slackParts, toDeliveryError } from './sender.js';

export interface SlackLiveSurfaceOptions {
  web: webApi.WebClient;
  /** Least time between two edits of one reply (chat.update is Tier 3: about 50 a minute). @defaultValue 1200 */
  editIntervalMs?: number;
}

/** Edits and posts replies in place on Slack; see the file header. */
export class SlackLiveSurface implements LiveSurface<string> {
  readonly limit = SLACK_TEXT_LIMIT;
  readonly editIntervalMs: number;
  private readonly web: webApi.WebClient;

  constructor(options: SlackLiveSurfaceOptions) {
    this.web = options.web;
    this.editIntervalMs = options.editIntervalMs ?? 1200;
    if (!Number.isFinite(this.editIntervalMs) || this.editIntervalMs < 0) {
      throw new RangeError(`editIntervalMs must be a non-negative number, got ${this.editIntervalMs}`);
    }
  }

  async post(target: LiveTarget, text: string): Promise<string> {
    return this.create(target, { ...postArgs(target, escapeMrkdwn(text)), mrkdwn: false });
  }

  async edit(target: LiveTarget, messageId: string, text: string): Promise<void> {
    await this.update(target, { channel: target.chatId, ts: messageId, text: escapeMrkdwn(text) });
  }

  finalParts(content: string): string[] {
    return slackParts(content);
  }

  async editFinal(
    target: LiveTarget,
    messageId: string,
    part: string,
    actions?: readonly OutboundAction[],
  ): Promise<void> {
    const blocks = blocksWith(part, actions);
    await this.update(target, {
      channel: target.chatId,
      ts: messageId,
      text: part,
      ...(blocks ? { blocks } : {}),
    });
  }

  async postFinal(
    target: LiveTarget,
    part: string,
    _key: string,
    actions?: readonly OutboundAction[],
  ): Promise<string> {
    return this.create(target, postArgs(target, part, actions));
  }

  /** Deletes the message; one already gone (message_not_found) resolves. */
  async remove(target: LiveTarget, messageId: string): Promise<void> {
    try {
      await this.web.chat.delete({ channel: target.chatId, ts: messageId });
    } catch (err) {
      if ((err as { data?: { error?: string } }).data?.error === 'message_not_found') return;
      throw toDeliveryError(err, target.chatId);
    }
  }

  private async update(target: LiveTarget, args: webApi.ChatUpdateArguments): Promise<void> {
    try {
      await this.web.chat.update(args);
    } catch (err) {
      throw toDeliveryError(err, target.chatId);
    }
  }

  private async create(target: LiveTarget, args: webApi.ChatPostMessageArguments): Promise<string> {
    let ts: string | undefined;
    try {
      ts = (await this.web.chat.postMessage(args)).ts;
    } catch (err) {
      throw toDeliveryError(err, target.chatId);
    }
    if (!ts) {
      throw new AppError('DELIVERY_TRANSIENT', `slack answered a post to ${target.chatId} without a ts`, {
        transient: true,
      });
    }
    return ts;
  }
}
