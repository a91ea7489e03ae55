/**
 * Discord's half of live replies (the LiveSurface the shared renderer drives),
 * over discord.js REST like sender.ts: a post carries a deterministic nonce
 * with `enforce_nonce` (a retried post returns the message already made), edits
 * are PATCHes, the final form is the same Markdown (Discord renders it itself),
 * and a preview part no longer needed is deleted; the last final part carries
 * the reply's buttons (components). REST waits 429s out itself
 * unless built with `rejectOnRateLimit`; then a 429 is DELIVERY_TRANSIENT with
 * its wait. Errors are classified by toDeliveryError.
 */
import { DiscordAPIError, type REST, Routes } from 'discord.js';
import { AppError } from '../../errors/index.js';
import type { OutboundAction } from '../../messages/messages.js';
import type { LiveSurface, LiveTarget } from '../live/surface.js';
import { buttonsBody } from './buttons.js';
import { DISCORD_MESSAGE_LIMIT, discordParts, nonceFor, targetChannelId, toDeliveryError } from './sender.js';

export interface DiscordLiveSurfaceOptions {
  /** The client's REST (already given its token). */
  rest: REST;
  /** Least time between two edits in one channel (Discord allows 5 per 5 s). @defaultValue 1000 */
  editIntervalMs?: number;
}

/** Discord's JSON code for a message that does not exist (deleted, or never was). */
const UNKNOWN_MESSAGE = 10008;

/** No pings from a reply, whatever its text holds (as deliverMessage sends). */
const NO_MENTIONS = { parse: [], replied_user: false };

/** Edits and posts replies in place on Discord; see the file header. */
export class DiscordLiveSurface implements LiveSurface<string> {
  readonly limit = DISCORD_MESSAGE_LIMIT;
  readonly editIntervalMs: number;
  private readonly rest: REST;

  constructor(options: DiscordLiveSurfaceOptions) {
    this.rest = options.rest;
    this.editIntervalMs = options.editIntervalMs ?? 1000;
    if (!Number.isFinite(this.editIntervalMs) || this.editIntervalMs < 0) {
      throw new RangeError(`editIntervalMs must be a non-negative number, got ${this.editIntervalMs}`);
    }
  }

  /** Posts text with the nonce for `key` (a second post with the same key returns the first message). */
  post(target: LiveTarget, text: string, key: string): Promise<string> {
    return this.create(target, text, key);
  }

  /** Replaces the message's content. */
  edit(target: LiveTarget, messageId: string, text: string): Promise<void> {
    return this.patch(target, messageId, text, undefined);
  }

  /** The final reply as DiscordChannel.send splits it. */
  finalParts(content: string): string[] {
    return discordParts(content);
  }

  /** Edits the message into a final part (Markdown passes through), with `actions` as its buttons. */
  editFinal(
    target: LiveTarget,
    messageId: string,
    part: string,
    actions?: readonly OutboundAction[],
  ): Promise<void> {
    return this.patch(target, messageId, part, actions);
  }

  /** Posts a final part as a new message with the nonce for `key` and `actions` as its buttons. */
  postFinal(
    target: LiveTarget,
    part: string,
    key: string,
    actions?: readonly OutboundAction[],
  ): Promise<string> {
    return this.create(target, part, key, actions);
  }

  /** Deletes the message; one that is already gone (10008 Unknown Message) resolves. */
  async remove(target: LiveTarget, messageId: string): Promise<void> {
    const channelId = targetChannelId(target);
    try {
      await this.rest.delete(Routes.channelMessage(channelId, toSnowflake(messageId)));
    } catch (err) {
      if (err instanceof DiscordAPIError && Number(err.code) === UNKNOWN_MESSAGE) return;
      throw toDeliveryError(err, channelId);
    }
  }

  private async patch(
    target: LiveTarget,
    messageId: string,
    text: string,
    actions: readonly OutboundAction[] | undefined,
  ): Promise<void> {
    const channelId = targetChannelId(target);
    try {
      await this.rest.patch(Routes.channelMessage(channelId, toSnowflake(messageId)), {
        body: { content: text, allowed_mentions: NO_MENTIONS, ...buttonsBody(actions) },
      });
    } catch (err) {
      throw toDeliveryError(err, channelId);
    }
  }

  private async create(
    target: LiveTarget,
    content: string,
    key: string,
    actions?: readonly OutboundAction[],
  ): Promise<string> {
    const channelId = targetChannelId(target);
    const body: Record<string, unknown> = {
      content,
      nonce: nonceFor(key, 0),
      enforce_nonce: true,
      allowed_mentions: NO_MENTIONS,
      ...buttonsBody(actions),
    };
    if (target.replyTo) {
      body['message_reference'] = { message_id: target.replyTo, fail_if_not_exists: false };
    }
    let created: unknown;
    try {
      created = await this.rest.post(Routes.channelMessages(channelId), { body });
    } catch (err) {
      throw toDeliveryError(err, channelId);
    }
    const id = (created as { id?: unknown } | null)?.id;
    if (typeof id !== 'string' || id === '') {
      throw new AppError(
        'DELIVERY_TRANSIENT',
        `discord answered a post to channel ${channelId} without a message id`,
        { transient: true },
      );
    }
    return id;
  }
}

/** A Discord message id from a live record; anything else is a bug upstream, refused for good. */
function toSnowflake(messageId: string): string {
  if (!/^\d{1,20}$/.test(messageId)) {
    throw new AppError('DELIVERY_PERMANENT', `not a Discord message id: ${JSON.stringify(messageId)}`);
  }
  return messageId;
}
