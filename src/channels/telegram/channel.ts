/**
 * The Telegram channel: getMe and command registration at start, long polling
 * into the bus (access check first, then group gating, commands and media),
 * and delivery of replies with typing in between. Never calls the LLM.
 */
import { Telegram, TelegramError } from 'telegraf';
import type { InboundMessageInput, OutboundMessage } from '../../bus/messages.js';
import { sessionKeyOf } from '../../bus/messages.js';
import { COMMANDS, stopReply } from '../../commands/list.js';
import { isStopCommand } from '../../commands/parse.js';
import { AppError, ConfigError, describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import { AccessControl } from '../access.js';
import type { Channel, ChannelDeps } from '../types.js';
import { formatForTelegram, TelegramDelivery } from './delivery.js';
import {
  type BotIdentity,
  cleanText,
  isAddressedToBot,
  isCommandForOtherBot,
  isGroupChat,
  planMedia,
  senderOf,
  type TgMessage,
  type TgUpdate,
} from './inbound.js';
import { fetchMedia } from './media.js';
import { UpdatePoller } from './polling.js';
import { TypingIndicator } from './typing.js';

/** Tuning knobs, mostly for tests. */
export interface TelegramChannelOptions {
  /** getUpdates long-poll timeout in seconds. @defaultValue 30 */
  pollTimeoutSeconds?: number;
  /** @defaultValue 4000 */
  typingIntervalMs?: number;
  /** Attempts per message part on 429/5xx/network errors. @defaultValue 6 */
  sendAttempts?: number;
  /** First retry delay for sends and for updates the bus refused. @defaultValue 1000 */
  retryDelayMs?: number;
  /** Pairing code lifetime. @defaultValue 3600 */
  pairingTtlSeconds?: number;
}

/** How many partly delivered replies to remember (a retried job resumes after its sent parts). */
const PROGRESS_LIMIT = 1000;

export class TelegramChannel implements Channel {
  readonly name = 'telegram';
  private readonly logger: Logger;
  private readonly telegram: Telegram;
  private readonly access: AccessControl;
  private readonly delivery: TelegramDelivery;
  private readonly typing: TypingIndicator;
  private readonly poller: UpdatePoller;
  private readonly downloads = new AbortController();
  /** Parts already delivered per outbound message id. */
  private readonly progress = new Map<string, number>();
  private bot: BotIdentity | undefined;

  constructor(
    private readonly deps: ChannelDeps,
    options: TelegramChannelOptions = {},
  ) {
    const token = deps.config.telegram.token;
    if (!token) throw new ConfigError('TELEGRAM_BOT_TOKEN is not set: put the token from @BotFather in .env');
    this.logger = deps.logger.child({ channel: this.name });
    const apiRoot = deps.config.telegram.apiRoot;
    this.telegram = new Telegram(token, apiRoot ? { apiRoot } : {});
    this.access = new AccessControl({
      channel: this.name,
      allowFrom: deps.config.telegram.allowFrom,
      redis: deps.redis,
      prefix: deps.config.redis.prefix,
      ...(options.pairingTtlSeconds ? { codeTtlSeconds: options.pairingTtlSeconds } : {}),
    });
    this.delivery = new TelegramDelivery({
      telegram: this.telegram,
      logger: this.logger,
      maxAttempts: options.sendAttempts ?? 6,
      baseDelayMs: options.retryDelayMs ?? 1000,
    });
    this.typing = new TypingIndicator({
      logger: this.logger,
      intervalMs: options.typingIntervalMs ?? 4000,
      sendAction: (chatId, threadId) =>
        this.telegram.sendChatAction(
          chatId,
          'typing',
          threadId ? { message_thread_id: Number(threadId) } : {},
        ),
    });
    this.poller = new UpdatePoller({
      telegram: this.telegram,
      logger: this.logger,
      handle: (update) => this.handleUpdate(update),
      timeoutSeconds: options.pollTimeoutSeconds ?? 30,
      backoffMs: options.retryDelayMs ?? 1000,
    });
  }

  /** Checks the token (getMe; a refused token is fatal), registers commands, starts polling. */
  async start(): Promise<void> {
    let me: Awaited<ReturnType<Telegram['getMe']>>;
    try {
      me = await this.telegram.getMe();
    } catch (err) {
      if (err instanceof TelegramError && (err.code === 401 || err.code === 404)) {
        throw new ConfigError(
          'TELEGRAM_BOT_TOKEN was refused by Telegram (401 Unauthorized): check the token',
        );
      }
      throw new AppError('DELIVERY_TRANSIENT', `Telegram is unreachable: ${describeError(err)}`, {
        cause: err,
        transient: true,
      });
    }
    this.bot = { id: me.id, username: me.username };
    this.logger.info({ bot: me.username }, 'Telegram bot connected');
    const commands = COMMANDS.map(({ command, description }) => ({ command, description }));
    await this.telegram.setMyCommands(commands).catch((err: unknown) => {
      this.logger.warn({ err: describeError(err) }, 'could not register Telegram commands');
    });
    this.poller.start();
  }

  async stop(): Promise<void> {
    this.downloads.abort();
    await this.poller.stop();
    this.typing.stopAll();
  }

  /** Delivers a reply: formatted, split, in order; a retried message resumes after its sent parts. */
  async send(message: OutboundMessage): Promise<void> {
    if (message.kind !== 'message') this.typing.stop(message.chatId, message.threadId);
    const parts = formatForTelegram(message.content);
    const done = this.progress.get(message.id) ?? 0;
    for (let i = done; i < parts.length; i++) {
      await this.delivery.sendPart(
        {
          chatId: message.chatId,
          ...(message.threadId ? { threadId: message.threadId } : {}),
          ...(message.replyTo && i === 0 ? { replyTo: message.replyTo } : {}),
        },
        parts[i]!,
      );
      this.rememberProgress(message.id, i + 1);
    }
    this.progress.delete(message.id);
  }

  startActivity(chatId: string, threadId?: string): void {
    this.typing.start(chatId, threadId);
  }

  stopActivity(chatId: string, threadId?: string): void {
    this.typing.stop(chatId, threadId);
  }

  private rememberProgress(id: string, count: number): void {
    this.progress.delete(id);
    this.progress.set(id, count);
    if (this.progress.size > PROGRESS_LIMIT) {
      const oldest = this.progress.keys().next().value;
      if (oldest !== undefined) this.progress.delete(oldest);
    }
  }

  /**
   * One update → at most one bus message. Rejects only when the bus (Redis)
   * failed, so the poller retries the update instead of confirming it.
   */
  private async handleUpdate(update: TgUpdate): Promise<void> {
    const message = update.message;
    const bot = this.bot;
    if (!message?.from || message.from.is_bot || !bot) return;
    const group = isGroupChat(message);
    if (!group && message.chat.type !== 'private') return;
    if (isCommandForOtherBot(message, bot)) return;
    if (group && !isAddressedToBot(message, bot)) return;

    const sender = senderOf(message.from);
    const chatId = String(message.chat.id);
    const threadId =
      message.is_topic_message && message.message_thread_id ? String(message.message_thread_id) : undefined;
    const log = this.logger.child({ chatId, updateId: update.update_id });

    if (!(await this.access.isAllowed(sender))) {
      if (group) {
        log.debug({ senderId: sender.id }, 'group message from an unknown sender ignored');
        return;
      }
      const pairing = await this.access.requestPairing(sender, chatId);
      if (pairing.status === 'send') {
        log.info({ senderId: sender.id }, 'pairing code sent to an unknown sender');
        await this.notify(chatId, pairingText(pairing.code), threadId);
      } else {
        // Told recently, or too many strangers pending: say nothing (no flood, nothing stored).
        log.debug({ senderId: sender.id, pairing: pairing.status }, 'unknown sender: no pairing message');
      }
      return;
    }

    const content = cleanText(message, bot);
    const sessionKey = sessionKeyOf({ channel: this.name, chatId, threadId });
    if (isStopCommand(content, bot.username)) {
      const stopped = await this.deps.bus.cancel(sessionKey);
      await this.notify(chatId, stopReply(stopped), threadId);
      return;
    }

    const media = await fetchMedia(planMedia(message, this.deps.config.media.maxBytes), {
      telegram: this.telegram,
      logger: log,
      maxBytes: this.deps.config.media.maxBytes,
      signal: this.downloads.signal,
    });
    // Stopping mid-download: leave the update unconfirmed so it is fetched again after a restart.
    if (this.downloads.signal.aborted) throw new AppError('CANCELLED', 'stopped while fetching attachments');
    if (content === '' && media.length === 0) return;
    await this.deps.bus.publishInbound(this.toInbound(message, { content, media, chatId, threadId, group }));
  }

  private toInbound(
    message: TgMessage,
    m: {
      content: string;
      media: InboundMessageInput['media'];
      chatId: string;
      threadId: string | undefined;
      group: boolean;
    },
  ): InboundMessageInput {
    const sender = senderOf(message.from!);
    return {
      id: `telegram:${m.chatId}:${message.message_id}`,
      channel: this.name,
      chatId: m.chatId,
      ...(m.threadId ? { threadId: m.threadId } : {}),
      senderId: sender.id,
      ...(sender.displayName ? { senderName: sender.displayName } : {}),
      content: m.content,
      media: m.media,
      platformMessageId: String(message.message_id),
      isGroup: m.group,
      metadata: {
        ...(sender.username ? { username: sender.username } : {}),
        ...(m.group && message.chat.title ? { chatTitle: message.chat.title } : {}),
      },
    };
  }

  /** A short notice; a failure is logged, never retried forever (the update is still confirmed). */
  private async notify(chatId: string, text: string, threadId: string | undefined): Promise<void> {
    try {
      await this.delivery.sendPlain(chatId, text, threadId);
    } catch (err) {
      this.logger.warn({ chatId, err: describeError(err) }, 'Telegram notice not delivered');
    }
  }
}

/** The only thing an unknown DM sender is told. */
export function pairingText(code: string): string {
  return `Hi! I don't know you yet. Ask my owner to run: npx magpie pairing approve ${code}`;
}
