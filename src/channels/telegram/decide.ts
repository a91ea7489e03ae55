/**
 * A received Telegram update → what to do with it: ignore, offer pairing, or
 * hand an InboundMessage (with the attachments to fetch) to the intake
 * (channels/intake.ts, where commands such as /stop are routed). Every inbound
 * rule of the adapter is here, in order — private and group chats only, other
 * bots' commands dropped, groups only when addressed, the access check
 * (strangers in a DM get a pairing code, in a group nothing), then the
 * message — as Discord's are in discord/inbound.ts. The only I/O is the access
 * check; nothing is downloaded or sent.
 *
 * A press of one of the bot's buttons (a `callback_query`) is read here too,
 * into the chat of the message holding the button, and decided by the rules
 * every channel shares (channels/press.ts): no addressing in groups (a press
 * is for the bot), the same access check, no pairing code.
 *
 * Sessions: a chat is `telegram:<chatId>`; a forum topic is
 * `telegram:<chatId>/<topicId>` and replies go to the topic. A named bot
 * account's messages carry its instance name instead (`telegram-family:<chatId>`),
 * so one person talking to two bots has two conversations.
 */
import type { InboundMessageInput } from '../../messages/messages.js';
import type { AccessControl, Sender } from '../access.js';
import { decidePress, type PressDecision } from '../press.js';
import {
  type BotIdentity,
  cleanText,
  isAddressedToBot,
  isCommandForOtherBot,
  isGroupChat,
  type MediaPlan,
  planMedia,
  senderOf,
  type TgCallbackQuery,
  type TgMessage,
  type TgUpdate,
} from './inbound.js';

/** Where a chat's replies go. */
export interface TelegramRoute {
  chatId: string;
  /** The forum topic, when the message was in one. */
  threadId?: string;
}

/** The adapter's decision about one update. */
export type TelegramAction =
  | { kind: 'ignore'; reason: string }
  | { kind: 'pairing'; route: TelegramRoute; senderId: string; code: string }
  | {
      kind: 'publish';
      route: TelegramRoute;
      message: Omit<InboundMessageInput, 'media'>;
      media: MediaPlan[];
    }
  | {
      kind: 'press';
      /** The callback query, answered whatever the decision (the presser's button spins until then). */
      queryId: string;
      /** The message holding the button, when the query names one (its buttons go once the press is taken). */
      holder?: { route: TelegramRoute; messageId: number };
      decision: PressDecision;
    };

export interface DecideContext {
  /** The channel instance: `telegram`, or `telegram-<account>` for a named bot. */
  channel: string;
  /** The bot itself (from getMe). */
  bot: BotIdentity;
  /** Who may talk to the bot; asked only about messages that passed the other rules. */
  access: Pick<AccessControl, 'isAllowed' | 'requestPairing'>;
  /** The largest attachment to fetch (MAGPIE_MAX_MEDIA_BYTES). */
  maxMediaBytes: number;
}

/**
 * Decides what to do with `update`. Rejects only when the access check
 * (Redis) failed, so the caller can leave the update unconfirmed and retry.
 */
export async function decideUpdate(update: TgUpdate, ctx: DecideContext): Promise<TelegramAction> {
  if (update.callback_query) return decideQuery(update.callback_query, ctx);
  const message = update.message;
  const { bot } = ctx;
  if (!message?.from) return { kind: 'ignore', reason: 'not a message from a person' };
  if (message.from.is_bot) return { kind: 'ignore', reason: 'from a bot' };
  const group = isGroupChat(message);
  if (!group && message.chat.type !== 'private')
    return { kind: 'ignore', reason: 'not a private or group chat' };
  if (isCommandForOtherBot(message, bot)) return { kind: 'ignore', reason: 'a command for another bot' };
  if (group && !isAddressedToBot(message, bot)) return { kind: 'ignore', reason: 'not addressed to the bot' };

  const sender = senderOf(message.from);
  const route = routeOf(message);
  if (!(await ctx.access.isAllowed(sender))) {
    if (group) return { kind: 'ignore', reason: 'group message from an unknown sender' };
    const pairing = await ctx.access.requestPairing(sender, route.chatId);
    if (pairing.status === 'send') return { kind: 'pairing', route, senderId: sender.id, code: pairing.code };
    // Told recently, or too many strangers pending: say nothing (no flood, nothing stored).
    return {
      kind: 'ignore',
      reason: pairing.status === 'full' ? 'too many pending pairing requests' : 'pairing code sent recently',
    };
  }

  const content = cleanText(message, bot);
  const media = planMedia(message, ctx.maxMediaBytes);
  if (content === '' && media.length === 0) return { kind: 'ignore', reason: 'empty message' };
  return {
    kind: 'publish',
    route,
    message: inboundOf(ctx.channel, message, route, content, group),
    media,
  };
}

/** A button press: the command it carries, as the presser, in the chat of the message holding it. */
async function decideQuery(query: TgCallbackQuery, ctx: DecideContext): Promise<TelegramAction> {
  const message = query.message;
  const ignore = (reason: string): TelegramAction => ({
    kind: 'press',
    queryId: query.id,
    decision: { kind: 'ignore', reason },
  });
  if (!message) return ignore('a press on an inline-mode message');
  const group = isGroupChat(message);
  if (!group && message.chat.type !== 'private') return ignore('not a private or group chat');
  const route = routeOf(message);
  const presser = senderOf(query.from);
  const decision = await decidePress(
    {
      id: `${ctx.channel}:${route.chatId}:cbq:${query.id}`,
      channel: ctx.channel,
      data: query.data,
      presser: { ...presser, bot: query.from.is_bot },
      ...route,
      isGroup: group,
      messageId: String(message.message_id),
      metadata: metadataOf(presser, message, group),
    },
    ctx.access,
  );
  return {
    kind: 'press',
    queryId: query.id,
    holder: { route, messageId: message.message_id },
    decision,
  };
}

function routeOf(message: Pick<TgMessage, 'chat' | 'is_topic_message' | 'message_thread_id'>): TelegramRoute {
  const chatId = String(message.chat.id);
  const topic = message.is_topic_message && message.message_thread_id;
  return topic ? { chatId, threadId: String(topic) } : { chatId };
}

function inboundOf(
  channel: string,
  message: TgMessage,
  route: TelegramRoute,
  content: string,
  group: boolean,
): Omit<InboundMessageInput, 'media'> {
  const sender = senderOf(message.from!);
  return {
    id: `${channel}:${route.chatId}:${message.message_id}`,
    channel,
    ...route,
    senderId: sender.id,
    ...(sender.displayName ? { senderName: sender.displayName } : {}),
    content,
    platformMessageId: String(message.message_id),
    isGroup: group,
    metadata: metadataOf(sender, message, group),
  };
}

/** What a message's metadata says about its sender and chat. */
function metadataOf(
  sender: Sender,
  message: Pick<TgMessage, 'chat'>,
  group: boolean,
): Record<string, unknown> {
  return {
    ...(sender.username ? { username: sender.username } : {}),
    ...(group && message.chat.title ? { chatTitle: message.chat.title } : {}),
  };
}
