/**
 * The Telegram channel: getMe and command registration at start, long polling
 * into the bus (access check first, then group gating, then the intake, which
 * routes commands, with media fetched only for what is published), and delivery of replies with typing in between. Never calls the LLM.
 * A message's actions are inline buttons under its last part; a press (a
 * callback query) is answered, takes the buttons off that message and goes
 * to the intake as its command, typed by the presser.
 *
 * One instance is one bot: the default one is `telegram` (TELEGRAM_BOT_TOKEN),
 * each named account `telegram-<name>` (TELEGRAM_ACCOUNTS), with its own
 * client, poller, queue, sessions, pairing and live replies.
 */
import { Telegram, TelegramError } from 'telegraf';
import { COMMANDS } from '../../commands/list.js';
import type { BotInstance } from '../../config/bot-accounts.js';
import { streamsTo } from '../../config/index.js';
import { AppError, ConfigError, describeError } from '../../errors/index.js';
import { runAll } from '../../lifecycle/run-all.js';
import type { Logger } from '../../log/index.js';
import type { LiveUpdate } from '../../messages/live-update.js';
import type { InboundMessageInput, OutboundMessage } from '../../messages/messages.js';
import { spokenAudio } from '../../voice/outbound-audio.js';
import { AccessControl } from '../access.js';
import { busIntakePorts, intake } from '../intake.js';
import { LiveRenderer } from '../live/renderer.js';
import { MemoryLiveRecords } from '../live/surface.js';
import { pairingText } from '../pairing-text.js';
import { SendProgress } from '../send-progress.js';
import type { Channel, ChannelDeps } from '../types.js';
import { TypingLoop } from '../typing.js';
import { decideUpdate, type TelegramAction, type TelegramRoute } from './decide.js';
import type { BotIdentity, MediaPlan, TgUpdate } from './inbound.js';
import { TelegramLiveSurface } from './live.js';
import { fetchMedia } from './media.js';
import { UpdatePoller } from './polling.js';
import { type FormattedPart, formatForTelegram, type InlineKeyboard, TelegramSender } from './sender.js';

/** The keyboard that takes a message's buttons away. */
const NO_BUTTONS: InlineKeyboard = { inline_keyboard: [] };
/** Telegram's answer to an edit that changes nothing: the buttons are already gone. */
const NOT_MODIFIED = /message is not modified/i;

/** Tuning knobs, mostly for tests. */
export interface TelegramChannelOptions {
  /**
   * The bot this instance runs: its channel name, token and where the token is set.
   * @defaultValue `telegram` with TELEGRAM_BOT_TOKEN
   */
  bot?: BotInstance;
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
  /** Least time between two edits of a live reply in one chat. @defaultValue 1000 */
  editIntervalMs?: number;
}

export class TelegramChannel implements Channel {
  /** `telegram`, or `telegram-<account>`: its queue, its sessions' prefix, its pairing list. */
  readonly name: string;
  /** Where its token is set, for messages about it. */
  private readonly tokenSource: string;
  private readonly logger: Logger;
  private readonly telegram: Telegram;
  private readonly access: AccessControl;
  private readonly delivery: TelegramSender;
  private readonly typing: TypingLoop;
  private readonly poller: UpdatePoller;
  /** Live replies (undefined when TELEGRAM_STREAM / MAGPIE_STREAM is off). */
  private readonly live: LiveRenderer<FormattedPart> | undefined;
  private readonly downloads = new AbortController();
  private stopping: Promise<void> | undefined;
  /** Parts already delivered per outbound message id. */
  private readonly progress = new SendProgress();
  private bot: BotIdentity | undefined;

  constructor(
    private readonly deps: ChannelDeps,
    options: TelegramChannelOptions = {},
  ) {
    const token = options.bot?.token ?? deps.config.channels.telegram.token;
    if (!token) throw new ConfigError('TELEGRAM_BOT_TOKEN is not set: put the token from @BotFather in .env');
    this.name = options.bot?.name ?? 'telegram';
    this.tokenSource = options.bot?.source ?? 'TELEGRAM_BOT_TOKEN';
    this.logger = deps.logger.child({ channel: this.name });
    const apiRoot = deps.config.channels.telegram.apiRoot;
    this.telegram = new Telegram(token, apiRoot ? { apiRoot } : {});
    this.access = new AccessControl({
      channel: this.name,
      allowFrom: deps.config.channels.telegram.allowFrom,
      pairing: deps.pairing,
      ...(options.pairingTtlSeconds ? { codeTtlSeconds: options.pairingTtlSeconds } : {}),
    });
    this.delivery = new TelegramSender({
      telegram: this.telegram,
      logger: this.logger,
      maxAttempts: options.sendAttempts ?? 6,
      baseDelayMs: options.retryDelayMs ?? 1000,
    });
    this.typing = new TypingLoop({ logger: this.logger, intervalMs: options.typingIntervalMs ?? 4000 });
    this.live = streamsTo(deps.config, this.name)
      ? new LiveRenderer({
          channel: this.name,
          surface: new TelegramLiveSurface({
            telegram: this.telegram,
            sender: this.delivery,
            logger: this.logger,
            ...(options.editIntervalMs !== undefined ? { editIntervalMs: options.editIntervalMs } : {}),
          }),
          records: deps.bus.liveRecords ?? new MemoryLiveRecords(),
          logger: this.logger,
        })
      : undefined;
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
          `${this.tokenSource} was refused by Telegram (401 Unauthorized): check the token`,
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

  /** Stops downloads, the long poll and typing; every step runs even if one throws. Idempotent: the same promise every time. */
  stop(): Promise<void> {
    this.stopping ??= runAll([
      () => this.downloads.abort(),
      () => this.poller.stop(),
      () => this.typing.stopAll(),
    ]);
    return this.stopping;
  }

  /**
   * Delivers a reply: formatted, split, in order; a retried message resumes after its sent parts.
   * A reply completing a live preview is edited into it instead (LiveRenderer).
   */
  async send(message: OutboundMessage): Promise<void> {
    if (message.kind !== 'message') this.stopActivity(message.chatId, message.threadId);
    if (message.live && this.live && (await this.live.finish(message))) return;
    const audio = spokenAudio(message);
    if (audio) {
      await this.delivery.sendVoice(
        {
          chatId: message.chatId,
          ...(message.threadId ? { threadId: message.threadId } : {}),
          ...(message.replyTo ? { replyTo: message.replyTo } : {}),
        },
        audio.bytes,
        audio.durationSeconds,
      );
      if (message.content.trim() === '') return;
    }
    const parts = formatForTelegram(message.content);
    const done = this.progress.sent(message.id);
    for (let i = done; i < parts.length; i++) {
      await this.delivery.sendPart(
        {
          chatId: message.chatId,
          ...(message.threadId ? { threadId: message.threadId } : {}),
          ...(message.replyTo && i === 0 ? { replyTo: message.replyTo } : {}),
        },
        parts[i]!,
        i === parts.length - 1 ? message.actions : undefined,
      );
      this.progress.record(message.id, i + 1);
    }
    this.progress.finish(message.id);
  }

  /** Shows an answer being written: a message that grows by edits (about one per second). */
  async preview(update: LiveUpdate): Promise<void> {
    this.live?.update(update);
  }

  /** Typing in the chat (or forum topic) until the reply is delivered. */
  startActivity(chatId: string, threadId?: string): void {
    const extra = threadId ? { message_thread_id: Number(threadId) } : {};
    this.typing.start(typingKey(chatId, threadId), () =>
      this.telegram.sendChatAction(chatId, 'typing', extra),
    );
  }

  stopActivity(chatId: string, threadId?: string): void {
    this.typing.stop(typingKey(chatId, threadId));
  }

  /**
   * One update → at most one bus message (the decisions are in decide.ts).
   * Rejects only when the bus (Redis) failed, so the poller retries the
   * update instead of confirming it.
   */
  private async handleUpdate(update: TgUpdate): Promise<void> {
    const bot = this.bot;
    if (!bot) return;
    const maxBytes = this.deps.config.media.maxBytes;
    const action = await decideUpdate(update, {
      channel: this.name,
      bot,
      access: this.access,
      maxMediaBytes: maxBytes,
    });
    const chatId = (update.message ?? update.callback_query?.message)?.chat.id;
    const log = this.logger.child({ chatId, updateId: update.update_id });
    switch (action.kind) {
      case 'press':
        await this.handlePress(action, bot.username, log);
        return;
      case 'ignore':
        log.debug({ reason: action.reason }, 'update ignored');
        return;
      case 'pairing':
        log.info({ senderId: action.senderId }, 'pairing code sent to an unknown sender');
        await this.notify(action.route, pairingText(action.code));
        return;
      case 'publish':
        await intake(
          action.message,
          {
            publish: (message) => this.publishWithMedia(message, action.media, log),
            ...busIntakePorts(this.deps.bus),
            reply: (text) => this.notify(action.route, text),
          },
          { bot: bot.username },
        );
    }
  }

  /**
   * A button press: always answered (the presser's button spins until then); a press that is
   * taken also removes the message's buttons, so one question is answered once, and then goes to
   * the intake as the presser's message. Rejects only when the bus failed (the update is retried).
   */
  private async handlePress(
    action: Extract<TelegramAction, { kind: 'press' }>,
    bot: string,
    log: Logger,
  ): Promise<void> {
    const { decision, holder } = action;
    if (decision.kind === 'ignore') {
      if (decision.invalid) log.warn({ reason: decision.reason }, 'button press ignored');
      else log.debug({ reason: decision.reason }, 'button press ignored');
      await this.answerPress(action.queryId, log);
      return;
    }
    await this.answerPress(action.queryId, log);
    if (holder) await this.removeButtons(holder.route.chatId, holder.messageId, log);
    await intake(
      decision.message,
      {
        publish: (message) => this.deps.bus.publishInbound(message),
        ...busIntakePorts(this.deps.bus),
        reply: (text) => this.notify(holder?.route ?? { chatId: decision.message.chatId }, text),
      },
      { bot },
    );
  }

  /** answerCallbackQuery; a failure (already answered: a press delivered again) is logged. */
  private async answerPress(queryId: string, log: Logger): Promise<void> {
    try {
      await this.telegram.answerCbQuery(queryId);
    } catch (err) {
      log.debug({ queryId, err: describeError(err) }, 'callback query not answered');
    }
  }

  /** Takes the buttons off a message (an empty inline keyboard); a failure is logged. */
  private async removeButtons(chatId: string, messageId: number, log: Logger): Promise<void> {
    try {
      await this.telegram.editMessageReplyMarkup(chatId, messageId, undefined, NO_BUTTONS);
    } catch (err) {
      if (err instanceof TelegramError && NOT_MODIFIED.test(err.description)) return;
      log.warn({ messageId, err: describeError(err) }, 'buttons not removed from a Telegram message');
    }
  }

  /** Fetches the attachments, then publishes the message with them. */
  private async publishWithMedia(
    message: Omit<InboundMessageInput, 'media'>,
    plans: MediaPlan[],
    log: Logger,
  ): Promise<void> {
    const media = await fetchMedia(plans, {
      telegram: this.telegram,
      logger: log,
      maxBytes: this.deps.config.media.maxBytes,
      signal: this.downloads.signal,
    });
    // Stopping mid-download: leave the update unconfirmed so it is fetched again after a restart.
    if (this.downloads.signal.aborted) throw new AppError('CANCELLED', 'stopped while fetching attachments');
    await this.deps.bus.publishInbound({ ...message, media });
  }

  /** A short notice; a failure is logged, never retried forever (the update is still confirmed). */
  private async notify({ chatId, threadId }: TelegramRoute, text: string): Promise<void> {
    try {
      await this.delivery.sendPlain(chatId, text, threadId);
    } catch (err) {
      this.logger.warn({ chatId, err: describeError(err) }, 'Telegram notice not delivered');
    }
  }
}

/** A forum topic types on its own. */
function typingKey(chatId: string, threadId: string | undefined): string {
  return threadId ? `${chatId}/${threadId}` : chatId;
}
