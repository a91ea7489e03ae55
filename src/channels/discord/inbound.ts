/**
 * A received Discord message → what to do with it: ignore, offer pairing, or hand
 * an InboundMessage (with the attachments to fetch) to the intake
 * (channels/intake.ts, where commands such as /stop are routed). Access is
 * checked (and group mention gating applied) before any attachment is downloaded.
 *
 * Sessions: a DM or a server channel is `discord:<channelId>`; a thread is
 * `discord:<parentChannelId>/<threadId>` (chatId = parent, threadId = thread),
 * and replies go to the thread. A named bot account's messages carry its
 * instance name instead (`discord-work:<channelId>`), so one person talking
 * to two bots has two conversations.
 */
import type { Message } from 'discord.js';
import { AppError, describeError } from '../../errors/index.js';
import type { InboundMessageInput } from '../../messages/messages.js';
import type { AccessControl } from '../access.js';
import type { AttachmentInfo } from './media.js';

/** The adapter's decision about one message. */
export type InboundAction =
  | { kind: 'ignore'; reason: string }
  | { kind: 'pairing'; channelId: string; code: string }
  | {
      kind: 'publish';
      /** Where an immediate answer goes (the thread itself when in one). */
      channelId: string;
      message: Omit<InboundMessageInput, 'media'>;
      /** Fetched only when the message is published (an at-once command downloads nothing). */
      attachments: AttachmentInfo[];
    };

export interface InboundContext {
  /** The channel instance: `discord`, or `discord-<account>` for a named bot. */
  channel: string;
  botUserId: string;
  access: AccessControl;
}

/** Decides what to do with `message` (nothing is downloaded here). */
export async function handleInbound(message: Message, ctx: InboundContext): Promise<InboundAction> {
  if (message.author.bot || message.author.id === ctx.botUserId)
    return { kind: 'ignore', reason: 'from a bot' };
  if (message.system) return { kind: 'ignore', reason: 'system message' };
  const isGroup = message.guildId !== null;
  const mention = `<@!?${ctx.botUserId}>`;
  if (isGroup) {
    const mentioned = message.mentions.users.has(ctx.botUserId) || new RegExp(mention).test(message.content);
    const repliedToBot = message.mentions.repliedUser?.id === ctx.botUserId;
    if (!mentioned && !repliedToBot) return { kind: 'ignore', reason: 'not addressed to the bot' };
  }

  const sender = {
    id: message.author.id,
    username: message.author.username,
    displayName: message.member?.displayName ?? message.author.globalName ?? message.author.username,
  };
  let allowed: boolean;
  try {
    allowed = await ctx.access.isAllowed(sender);
    if (!allowed && !isGroup) {
      const pairing = await ctx.access.requestPairing(sender, message.channelId);
      if (pairing.status === 'send')
        return { kind: 'pairing', channelId: message.channelId, code: pairing.code };
      // Told recently, or too many strangers pending: say nothing (no flood, nothing stored).
      return {
        kind: 'ignore',
        reason:
          pairing.status === 'full' ? 'too many pending pairing requests' : 'pairing code sent recently',
      };
    }
  } catch (err) {
    // Redis is the only thing the access check talks to: retry the message later.
    throw new AppError('REDIS_UNAVAILABLE', `discord access check failed: ${describeError(err)}`, {
      cause: err,
      transient: true,
    });
  }
  if (!allowed) return { kind: 'ignore', reason: 'unknown sender in a server' };
  return publishOf(ctx.channel, message, sender, isGroup, mention);
}

/** The message to publish (the bot's mention taken out), or ignore when nothing is left. */
function publishOf(
  channelName: string,
  message: Message,
  sender: { id: string; username: string; displayName: string },
  isGroup: boolean,
  mention: string,
): InboundAction {
  const channel = message.channel;
  const inThread = channel.isThread() && channel.parentId !== null;
  const chatId = inThread ? channel.parentId! : message.channelId;
  const threadId = inThread ? channel.id : undefined;
  const content = message.content.replace(new RegExp(`[ \t]*${mention}[ \t]*`, 'g'), ' ').trim();
  const route = { channel: channelName, chatId, ...(threadId ? { threadId } : {}) };

  const attachments = [...message.attachments.values()].map((a) => ({
    name: a.name,
    contentType: a.contentType,
    size: a.size,
    url: a.url,
  }));
  if (content === '' && attachments.length === 0) return { kind: 'ignore', reason: 'empty message' };

  return {
    kind: 'publish',
    channelId: message.channelId,
    attachments,
    message: {
      id: `${channelName}:${message.channelId}:${message.id}`,
      ...route,
      senderId: sender.id,
      senderName: sender.displayName,
      content,
      platformMessageId: message.id,
      isGroup,
      receivedAt: new Date(message.createdTimestamp).toISOString(),
      metadata: { username: sender.username, ...(message.guildId ? { guildId: message.guildId } : {}) },
    },
  };
}
