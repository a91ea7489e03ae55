/**
 * A Slack `message` event → what to do with it: ignore, offer pairing, or hand
 * an InboundMessage (with the files to fetch) to the intake. Access is checked
 * (and addressing applied) before any file is downloaded.
 *
 * Addressing: a DM is always for magpie; in a channel magpie answers a message
 * that mentions it, or one in a thread it is part of (one it was mentioned
 * in or answered in since this process started, or one it started).
 * Sessions: a DM is `slack:<channel>` (a thread in it `slack:<channel>/<thread_ts>`);
 * in a channel every conversation is a thread, `slack:<channel>/<thread_ts>`
 * — a top-level message starts one under itself, and replies go there.
 */
import { AppError, describeError } from '../../errors/index.js';
import type { InboundMessageInput } from '../../messages/messages.js';
import type { AccessControl, Sender } from '../access.js';
import type { FileInfo } from './media.js';

/** A `message` event, as far as magpie reads it. */
export interface SlackMessageEvent {
  type: string;
  subtype?: string;
  channel?: string;
  channel_type?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  ts?: string;
  thread_ts?: string;
  parent_user_id?: string;
  files?: Array<{
    name?: string;
    mimetype?: string;
    size?: number;
    url_private_download?: string;
    url_private?: string;
  }>;
}

/** The adapter's decision about one event. */
export type InboundAction =
  | { kind: 'ignore'; reason: string }
  | { kind: 'pairing'; channel: string; threadTs?: string; code: string }
  | {
      kind: 'publish';
      /** Where an immediate answer goes. */
      channel: string;
      threadTs?: string;
      message: Omit<InboundMessageInput, 'media'>;
      /** Fetched only when the message is published (an at-once command downloads nothing). */
      files: FileInfo[];
    };

export interface InboundContext {
  botUserId: string;
  access: AccessControl;
  /** The sender's names (users.info, cached); undefined when Slack does not say. */
  senderOf(userId: string): Promise<Sender>;
  /** Whether magpie takes part in this channel thread. */
  inThread(channel: string, threadTs: string): boolean;
}

/** Subtypes that are a person writing (others are edits, joins, bots…). */
const USER_SUBTYPES = new Set([undefined, 'file_share', 'thread_broadcast']);

/** Decides what to do with `event` (nothing is downloaded here). */
export async function decideMessage(event: SlackMessageEvent, ctx: InboundContext): Promise<InboundAction> {
  if (event.type !== 'message') return { kind: 'ignore', reason: `event ${event.type}` };
  if (!USER_SUBTYPES.has(event.subtype)) return { kind: 'ignore', reason: `subtype ${event.subtype}` };
  const { channel, user, ts } = event;
  if (!channel || !ts || !user) return { kind: 'ignore', reason: 'no channel, user or ts' };
  if (event.bot_id || user === ctx.botUserId) return { kind: 'ignore', reason: 'from a bot' };
  const isGroup = event.channel_type !== 'im';
  const mention = `<@${ctx.botUserId}>`;
  const text = event.text ?? '';
  if (isGroup) {
    const thread = event.thread_ts;
    const addressed =
      text.includes(mention) ||
      (thread !== undefined && (event.parent_user_id === ctx.botUserId || ctx.inThread(channel, thread)));
    if (!addressed) return { kind: 'ignore', reason: 'not addressed to the bot' };
  }
  // Replies go into the message's thread; in a channel a top-level message starts one.
  const threadTs = event.thread_ts ?? (isGroup ? ts : undefined);
  let sender: Sender;
  let allowed: boolean;
  try {
    sender = await ctx.senderOf(user);
    allowed = await ctx.access.isAllowed(sender);
    if (!allowed && !isGroup) {
      const pairing = await ctx.access.requestPairing(sender, channel);
      if (pairing.status === 'send')
        return { kind: 'pairing', channel, ...(threadTs ? { threadTs } : {}), code: pairing.code };
      return {
        kind: 'ignore',
        reason:
          pairing.status === 'full' ? 'too many pending pairing requests' : 'pairing code sent recently',
      };
    }
  } catch (err) {
    throw new AppError('REDIS_UNAVAILABLE', `slack access check failed: ${describeError(err)}`, {
      cause: err,
      transient: true,
    });
  }
  if (!allowed) return { kind: 'ignore', reason: 'unknown sender in a channel' };

  const content = unescapeSlack(
    text
      .split(mention)
      .join(' ')
      .replace(/[ \t]{2,}/g, ' '),
  ).trim();
  const files = (event.files ?? []).flatMap((f) => {
    const url = f.url_private_download ?? f.url_private;
    return url ? [{ name: f.name ?? 'file', mimetype: f.mimetype, size: f.size ?? 0, url }] : [];
  });
  if (content === '' && files.length === 0) return { kind: 'ignore', reason: 'empty message' };
  return {
    kind: 'publish',
    channel,
    ...(threadTs ? { threadTs } : {}),
    files,
    message: {
      id: `slack:${channel}:${ts}`,
      channel: 'slack',
      chatId: channel,
      ...(threadTs ? { threadId: threadTs } : {}),
      senderId: user,
      senderName: sender.displayName ?? sender.username ?? user,
      content,
      platformMessageId: ts,
      isGroup,
      receivedAt: new Date(Number(ts) * 1000).toISOString(),
      metadata: { ...(sender.username ? { username: sender.username } : {}) },
    },
  };
}

/** Slack's escaped text as the person typed it (`&lt;` → `<`…). */
export function unescapeSlack(text: string): string {
  return text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}
