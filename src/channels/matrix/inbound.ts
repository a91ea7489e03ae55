/**
 * One room event from a sync → what to do with it: ignore it, offer pairing,
 * tell an encrypted room once that magpie cannot read it, or hand an
 * InboundMessage (with the media to fetch) to the intake. Every field is
 * checked before use: a malformed event is ignored, never thrown on.
 *
 * Addressing: a room of two (the bot and one person) is a DM and always for
 * magpie; in a room with more members magpie answers a message that mentions
 * it (`m.mentions`, its user id or display name in the body) or replies to one
 * of its messages. Sessions: the room (`matrix:<room>`), or a thread in it
 * (`m.thread`: `matrix:<room>/<root event>`), which is a conversation of its own.
 */
import { AppError, describeError } from '../../errors/index.js';
import type { InboundMessageInput } from '../../messages/messages.js';
import type { AccessControl, Sender } from '../access.js';
import type { MediaRef } from './media.js';

/** A room event as far as magpie reads it (every field unchecked). */
export type RawEvent = Record<string, unknown>;

export type InboundAction =
  | { kind: 'ignore'; reason: string }
  | { kind: 'encrypted'; roomId: string }
  | { kind: 'pairing'; roomId: string; threadId?: string; code: string }
  | {
      kind: 'publish';
      roomId: string;
      threadId?: string;
      message: Omit<InboundMessageInput, 'media'>;
      /** Fetched only when the message is published. */
      media: MediaRef[];
    };

export interface InboundContext {
  botUserId: string;
  /** The bot's display name in the room, when known. */
  botName: string | undefined;
  access: AccessControl;
  /** Members joined to the room (2 or fewer: a DM). */
  memberCount: number;
  /** The sender's display name in the room, when known. */
  displayName(userId: string): string | undefined;
  /** Whether the bot sent this event. */
  isOwnEvent(eventId: string): boolean;
}

const TEXT_TYPES = new Set(['m.text', 'm.emote']);
const MEDIA_TYPES = new Set(['m.image', 'm.audio', 'm.file', 'm.video']);
/** An mxc URI as the spec has it: a server name and a media id of URL-safe characters. */
const MXC = /^mxc:\/\/[A-Za-z0-9.:[\]-]+\/[A-Za-z0-9_-]+$/;

/** Decides what to do with `event` in `roomId` (nothing is downloaded here). */
export async function decideEvent(
  roomId: string,
  event: RawEvent,
  ctx: InboundContext,
): Promise<InboundAction> {
  const { event_id: eventId, sender, type } = event;
  const content = objectOr(event['content']);
  if (typeof eventId !== 'string' || typeof sender !== 'string' || typeof type !== 'string' || !content)
    return { kind: 'ignore', reason: 'malformed event' };
  if (sender === ctx.botUserId) return { kind: 'ignore', reason: 'own event' };
  if (type === 'm.room.encrypted') return { kind: 'encrypted', roomId };
  if (type !== 'm.room.message') return { kind: 'ignore', reason: `event ${type}` };
  const msgtype = content['msgtype'];
  const body = content['body'];
  if (typeof msgtype !== 'string' || typeof body !== 'string')
    return { kind: 'ignore', reason: 'malformed message' };
  if (!TEXT_TYPES.has(msgtype) && !MEDIA_TYPES.has(msgtype))
    return { kind: 'ignore', reason: `msgtype ${msgtype}` };
  const relation = objectOr(content['m.relates_to']);
  if (relation?.['rel_type'] === 'm.replace') return { kind: 'ignore', reason: 'an edit' };
  const threadId =
    relation?.['rel_type'] === 'm.thread' && typeof relation['event_id'] === 'string'
      ? relation['event_id']
      : undefined;
  const replyTo = objectOr(relation?.['m.in_reply_to'])?.['event_id'];
  const isGroup = ctx.memberCount > 2;
  const text = TEXT_TYPES.has(msgtype) ? withoutReplyFallback(body, typeof replyTo === 'string') : '';
  if (isGroup) {
    const addressed =
      mentionsOf(content).includes(ctx.botUserId) ||
      text.includes(ctx.botUserId) ||
      (ctx.botName !== undefined && namePattern(ctx.botName).test(text)) ||
      (typeof replyTo === 'string' && ctx.isOwnEvent(replyTo));
    if (!addressed) return { kind: 'ignore', reason: 'not addressed to the bot' };
  }
  const displayName = ctx.displayName(sender);
  const who: Sender = { ...matrixSender(sender), ...(displayName ? { displayName } : {}) };
  let allowed: boolean;
  try {
    allowed = await ctx.access.isAllowed(who);
    if (!allowed && !isGroup) {
      const pairing = await ctx.access.requestPairing(who, roomId);
      if (pairing.status === 'send')
        return { kind: 'pairing', roomId, ...(threadId ? { threadId } : {}), code: pairing.code };
      return {
        kind: 'ignore',
        reason:
          pairing.status === 'full' ? 'too many pending pairing requests' : 'pairing code sent recently',
      };
    }
  } catch (err) {
    throw new AppError('REDIS_UNAVAILABLE', `matrix access check failed: ${describeError(err)}`, {
      cause: err,
      transient: true,
    });
  }
  if (!allowed) return { kind: 'ignore', reason: 'unknown sender in a group room' };

  const media = MEDIA_TYPES.has(msgtype) ? mediaOf(msgtype, body, content) : [];
  const cleaned = withoutMention(text, ctx.botUserId, ctx.botName);
  if (cleaned === '' && media.length === 0) return { kind: 'ignore', reason: 'empty message' };
  const ts = typeof event['origin_server_ts'] === 'number' ? event['origin_server_ts'] : Date.now();
  return {
    kind: 'publish',
    roomId,
    ...(threadId ? { threadId } : {}),
    media,
    message: {
      id: `matrix:${eventId}`,
      channel: 'matrix',
      chatId: roomId,
      ...(threadId ? { threadId } : {}),
      senderId: sender,
      senderName: displayName ?? sender,
      content: cleaned,
      platformMessageId: eventId,
      isGroup,
      receivedAt: new Date(ts).toISOString(),
      metadata: {},
    },
  };
}

/**
 * A Matrix user as AccessControl reads it: an allow-list entry starting with `@` is a username
 * there, and every Matrix id starts with `@`, so the whole id is also the username.
 */
export function matrixSender(userId: string): Sender {
  return { id: userId, username: userId };
}

/** `m.mentions.user_ids`, the intentional mentions of newer clients. */
function mentionsOf(content: Record<string, unknown>): unknown[] {
  const ids = objectOr(content['m.mentions'])?.['user_ids'];
  return Array.isArray(ids) ? ids : [];
}

/** The body without the `> <@user> quoted` lines older clients put in front of a reply. */
function withoutReplyFallback(body: string, isReply: boolean): string {
  if (!isReply || !body.startsWith('> ')) return body;
  const lines = body.split('\n');
  const first = lines.findIndex((line) => !line.startsWith('>'));
  return first === -1 ? '' : lines.slice(first).join('\n').trim();
}

/** The text with the bot's user id and a leading `Name:` (Element's mention pill) taken out. */
function withoutMention(text: string, userId: string, name: string | undefined): string {
  let out = text.split(userId).join(' ');
  if (name) out = out.replace(new RegExp(`^\\s*${escapeRegExp(name)}\\s*:?`, 'i'), ' ');
  return out
    .replace(/^\s*:\s*/, '')
    .replace(/[ \t]{2,}/g, ' ')
    .trim();
}

function namePattern(name: string): RegExp {
  return new RegExp(`(^|[^\\p{L}\\p{N}])${escapeRegExp(name)}($|[^\\p{L}\\p{N}])`, 'iu');
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The file a media message points at, when its mxc URI is well formed (encrypted files are not read). */
function mediaOf(_msgtype: string, body: string, content: Record<string, unknown>): MediaRef[] {
  const url = content['url'];
  if (typeof url !== 'string' || !MXC.test(url)) return [];
  const info = objectOr(content['info']);
  const mimetype = typeof info?.['mimetype'] === 'string' ? info['mimetype'] : undefined;
  const size = typeof info?.['size'] === 'number' && info['size'] >= 0 ? info['size'] : 0;
  const fileName = typeof content['filename'] === 'string' ? content['filename'] : body;
  return [{ name: fileName || 'file', mimetype, size, mxc: url }];
}

function objectOr(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
