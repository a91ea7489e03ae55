/**
 * The Discord channel: a discord.js gateway client that turns messages into
 * InboundMessages (through the access check and a buffer that outlasts a Redis
 * outage) and delivers OutboundMessages over REST with typing while a turn runs.
 * A message's actions are buttons under its last part; a press (a button
 * interaction, through the same buffer) is acknowledged — by taking the
 * buttons off that message when it is taken — and goes to the intake as its
 * command, typed by the presser.
 *
 * One instance is one bot: the default one is `discord` (DISCORD_BOT_TOKEN),
 * each named account `discord-<name>` (DISCORD_ACCOUNTS), with its own client
 * and gateway connection, queue, sessions, pairing and live replies.
 */
import {
  type ButtonInteraction,
  Client,
  type ClientOptions,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  type Message,
  Partials,
  Routes,
} from 'discord.js';
import type { BotInstance } from '../../config/bot-accounts.js';
import { streamsTo } from '../../config/index.js';
import { AppError, ConfigError, describeError } from '../../errors/index.js';
import { runAll } from '../../lifecycle/run-all.js';
import type { Logger } from '../../log/index.js';
import type { LiveUpdate } from '../../messages/live-update.js';
import type { Media, OutboundMessage } from '../../messages/messages.js';
import { spokenAudio } from '../../voice/outbound-audio.js';
import { AccessControl } from '../access.js';
import { busIntakePorts, intake } from '../intake.js';
import { LiveRenderer } from '../live/renderer.js';
import { MemoryLiveRecords } from '../live/surface.js';
import { pairingText } from '../pairing-text.js';
import { decidePress, type PressDecision } from '../press.js';
import { PublishBuffer } from '../publish-buffer.js';
import { SendProgress } from '../send-progress.js';
import type { Channel, ChannelDeps } from '../types.js';
import { TypingLoop } from '../typing.js';
import { pressOf } from './buttons.js';
import { handleInbound, type InboundAction } from './inbound.js';
import { DiscordLiveSurface } from './live.js';
import { attachmentsToMedia } from './media.js';
import { deliverMessage, deliverVoice, targetChannelId } from './sender.js';

/** Tunables (tests shorten them); everything else comes from ChannelDeps. */
export interface DiscordChannelOptions {
  /**
   * The bot this instance runs: its channel name, token and where the token is set.
   * @defaultValue `discord` with DISCORD_BOT_TOKEN
   */
  bot?: BotInstance;
  /** Time between typing calls. @defaultValue 8000 */
  typingIntervalMs?: number;
  /** start() gives up when the gateway is not ready by then. @defaultValue 60000 */
  readyTimeoutMs?: number;
  /** Messages held while the bus is away. @defaultValue 1000 */
  bufferCapacity?: number;
  /** First retry delay of held messages. @defaultValue 200 */
  bufferRetryMs?: number;
  /** Least time between two edits of a live reply in one channel. @defaultValue 1000 */
  editIntervalMs?: number;
}

/** Discord's codes for an interaction that can no longer be answered: unknown (expired), already answered. */
const STALE_INTERACTION = new Set([10062, 40060]);

/** A received message and, once decided, what to do with it. */
interface ReceivedMessage {
  message: Message;
  action?: InboundAction;
  /** The attachments, once fetched (a retried publish does not fetch them again). */
  media?: Media[];
}

/** A button press and, once decided, what to do with it. */
interface ReceivedPress {
  press: ButtonInteraction;
  decision?: PressDecision;
  /** Set once the interaction was answered (a retried publish does not answer it again). */
  answered?: boolean;
}

type Received = ReceivedMessage | ReceivedPress;

/** A Channel over discord.js 14. Built by the descriptor (`discordChannel.create`). */
export class DiscordChannel implements Channel {
  /** `discord`, or `discord-<account>`: its queue, its sessions' prefix, its pairing list. */
  readonly name: string;
  private readonly deps: ChannelDeps;
  private readonly token: string;
  /** Where its token is set, for messages about it. */
  private readonly tokenSource: string;
  private readonly logger: Logger;
  private readonly client: Client;
  private readonly access: AccessControl;
  private readonly typing: TypingLoop;
  private readonly buffer: PublishBuffer<Received>;
  private readonly readyTimeoutMs: number;
  /** Live replies (undefined when DISCORD_STREAM / MAGPIE_STREAM is off). */
  private readonly live: LiveRenderer<string> | undefined;
  /** Parts already posted per outbound id, so a retried send resumes where it failed. */
  private readonly progress = new SendProgress();
  private botUserId = '';
  private stopping: Promise<void> | undefined;

  constructor(deps: ChannelDeps, options: DiscordChannelOptions = {}) {
    const token = options.bot?.token ?? deps.config.channels.discord.token;
    if (!token) throw new ConfigError('DISCORD_BOT_TOKEN is not set: put the bot token in .env');
    this.name = options.bot?.name ?? 'discord';
    this.token = token;
    this.tokenSource = options.bot?.source ?? 'DISCORD_BOT_TOKEN';
    this.deps = deps;
    this.logger = deps.logger.child({ channel: this.name });
    this.readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
    const clientOptions: ClientOptions = {
      intents: [
        GatewayIntentBits.Guilds,
        GatewayIntentBits.GuildMessages,
        GatewayIntentBits.DirectMessages,
        GatewayIntentBits.MessageContent,
      ],
      partials: [Partials.Channel],
      ...(deps.config.channels.discord.apiRoot
        ? { rest: { api: deps.config.channels.discord.apiRoot } }
        : {}),
    };
    this.client = new Client(clientOptions);
    this.client.rest.setToken(token);
    this.live = streamsTo(deps.config, this.name)
      ? new LiveRenderer({
          channel: this.name,
          surface: new DiscordLiveSurface({
            rest: this.client.rest,
            ...(options.editIntervalMs !== undefined ? { editIntervalMs: options.editIntervalMs } : {}),
          }),
          records: deps.bus.liveRecords ?? new MemoryLiveRecords(),
          logger: this.logger,
        })
      : undefined;
    this.access = new AccessControl({
      channel: this.name,
      allowFrom: deps.config.channels.discord.allowFrom,
      pairing: deps.pairing,
    });
    this.typing = new TypingLoop({ logger: this.logger, intervalMs: options.typingIntervalMs ?? 8000 });
    this.buffer = new PublishBuffer<Received>({
      publish: (received) => this.handle(received),
      idOf: (received) => ('press' in received ? `interaction ${received.press.id}` : received.message.id),
      logger: this.logger,
      label: this.name,
      capacity: options.bufferCapacity ?? 1000,
      initialDelayMs: options.bufferRetryMs ?? 200,
    });
    this.attachEvents();
  }

  /** Logs in and waits for the gateway to be ready. Rejects with one clear AppError. */
  async start(): Promise<void> {
    const ready = new Promise<void>((resolve) => this.client.once(Events.ClientReady, () => resolve()));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new AppError('TIMEOUT', `discord gateway not ready within ${this.readyTimeoutMs} ms`)),
        this.readyTimeoutMs,
      );
    });
    try {
      await Promise.race([this.client.login(this.token).then(() => ready), timeout]);
    } catch (err) {
      await this.client
        .destroy()
        .catch((e: unknown) => this.logger.debug({ err: e }, 'discord destroy failed'));
      throw toStartError(err, this.tokenSource);
    } finally {
      clearTimeout(timer);
    }
    this.botUserId = this.client.user?.id ?? '';
    this.logger.info({ bot: this.client.user?.tag, id: this.botUserId }, 'discord connected');
  }

  /** Received messages waiting for the bus (held while Redis is away). */
  get heldMessages(): number {
    return this.buffer.size;
  }

  /** Stops intake, typing and the connection; every step runs even if one throws. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= runAll([
      () => this.client.removeAllListeners(Events.MessageCreate),
      () => this.client.removeAllListeners(Events.InteractionCreate),
      () => this.typing.stopAll(),
      () => this.buffer.close(),
      () => this.client.destroy(),
    ]);
    return this.stopping;
  }

  /** Shows an answer being written: a message that grows by edits (within 5 edits per 5 s). */
  async preview(update: LiveUpdate): Promise<void> {
    this.live?.update(update);
  }

  async send(message: OutboundMessage): Promise<void> {
    const channelId = targetChannelId(message);
    if (message.kind !== 'message') this.typing.stop(channelId);
    if (message.live && this.live && (await this.live.finish(message))) return;
    const audio = spokenAudio(message);
    if (audio) {
      await deliverVoice(this.client.rest, message, audio);
      this.logger.debug(
        { id: message.id, channelId, seconds: audio.durationSeconds },
        'discord voice message delivered',
      );
    }
    if (message.content.trim() === '') {
      if (audio) return;
      this.logger.debug({ id: message.id }, 'empty discord message not sent');
      return;
    }
    const sent = this.progress.sent(message.id);
    const total = await deliverMessage(this.client.rest, message, sent, (index) => {
      this.progress.record(message.id, index + 1);
    });
    this.progress.finish(message.id);
    this.logger.debug({ id: message.id, channelId, parts: total }, 'discord message delivered');
  }

  /** Typing in the channel (a thread is its own channel) until the reply is delivered. */
  startActivity(chatId: string, threadId?: string): void {
    const channelId = threadId ?? chatId;
    this.typing.start(channelId, async () => {
      await this.client.rest.post(Routes.channelTyping(channelId));
    });
  }

  stopActivity(chatId: string, threadId?: string): void {
    this.typing.stop(threadId ?? chatId);
  }

  private attachEvents(): void {
    this.client.on(Events.MessageCreate, (message) => this.buffer.push({ message }));
    this.client.on(Events.InteractionCreate, (interaction) => {
      if (interaction.isButton()) this.buffer.push({ press: interaction });
    });
    this.client.on(Events.Error, (err) => this.logger.error({ err }, 'discord client error'));
    this.client.on(Events.ShardError, (err, shardId) =>
      this.logger.warn({ err, shardId }, 'discord connection error'),
    );
    this.client.on(Events.ShardDisconnect, (event, shardId) =>
      this.logger.warn({ code: event.code, shardId }, 'discord gateway disconnected'),
    );
    this.client.on(Events.ShardReconnecting, (shardId) =>
      this.logger.info({ shardId }, 'discord gateway reconnecting'),
    );
    this.client.on(Events.ShardResume, (shardId, replayed) =>
      this.logger.info({ shardId, replayed }, 'discord gateway resumed'),
    );
    this.client.on(Events.Warn, (info) => this.logger.warn({ info }, 'discord warning'));
  }

  /**
   * Handles one received message; the buffer calls this in arrival order and
   * retries it while Redis is away. The decision (access, downloads) is kept, so
   * a retry only repeats what failed.
   */
  private async handle(received: Received): Promise<void> {
    if ('press' in received) return this.handlePress(received);
    const { message } = received;
    received.action ??= await handleInbound(message, {
      channel: this.name,
      botUserId: this.botUserId || (this.client.user?.id ?? ''),
      access: this.access,
    });
    const action = received.action;
    switch (action.kind) {
      case 'ignore':
        this.logger.trace({ messageId: message.id, reason: action.reason }, 'discord message ignored');
        return;
      case 'pairing':
        this.logger.info({ senderId: message.author.id }, 'unknown discord sender: pairing code sent');
        await this.reply(action.channelId, pairingText(action.code));
        return;
      case 'publish':
        await intake(action.message, {
          publish: async (inbound) => {
            received.media ??= await attachmentsToMedia(action.attachments, {
              maxBytes: this.deps.config.media.maxBytes,
              logger: this.logger,
            });
            await this.deps.bus.publishInbound({ ...inbound, media: received.media });
          },
          ...busIntakePorts(this.deps.bus),
          reply: (text) => this.reply(action.channelId, text),
        });
    }
  }

  /**
   * A button press: acknowledged within Discord's three seconds when it can be; a press that is
   * taken takes the buttons off its message in that same answer (one question, one press), then
   * goes to the intake as the presser's message. Rejects while the bus is away (held and retried).
   */
  private async handlePress(received: ReceivedPress): Promise<void> {
    const { press } = received;
    received.decision ??= await decidePress(pressOf(press, this.name), this.access);
    const decision = received.decision;
    const log = this.logger.child({ interactionId: press.id, channelId: press.channelId });
    if (decision.kind === 'ignore') {
      if (decision.invalid) log.warn({ reason: decision.reason }, 'button press ignored');
      else log.debug({ reason: decision.reason }, 'button press ignored');
      await this.answerPress(received, false, log);
      return;
    }
    await this.answerPress(received, true, log);
    const channelId = press.channelId ?? decision.message.chatId;
    await intake(decision.message, {
      publish: (message) => this.deps.bus.publishInbound(message),
      ...busIntakePorts(this.deps.bus),
      reply: (text) => this.reply(channelId, text),
    });
  }

  /**
   * Answers the interaction once: `update` with no components (the message's buttons go) when
   * the press is taken, else `deferUpdate` (nothing changes). A failure (too late, answered
   * already: a press delivered again) is logged.
   */
  private async answerPress(received: ReceivedPress, taken: boolean, log: Logger): Promise<void> {
    if (received.answered) return;
    received.answered = true;
    try {
      if (taken) await received.press.update({ components: [] });
      else await received.press.deferUpdate();
    } catch (err) {
      const late = err instanceof DiscordAPIError && STALE_INTERACTION.has(Number(err.code));
      if (late) log.debug({ err: describeError(err) }, 'discord interaction answered already or expired');
      else log.warn({ err: describeError(err) }, 'discord interaction not answered');
    }
  }

  /** A short direct answer (pairing, an at-once command's); failures are logged, not thrown. */
  private async reply(channelId: string, content: string): Promise<void> {
    try {
      await this.client.rest.post(Routes.channelMessages(channelId), {
        body: { content, allowed_mentions: { parse: [] } },
      });
    } catch (err) {
      this.logger.warn({ err, channelId }, `discord reply failed: ${describeError(err)}`);
    }
  }
}

/** One clear error for a failed login. */
function toStartError(err: unknown, tokenSource: string): AppError {
  if (err instanceof AppError) return err;
  const code = (err as { code?: unknown }).code;
  if (code === 'TokenInvalid') {
    return new ConfigError(`${tokenSource} was refused by Discord: check the token in .env`, {
      cause: err,
    });
  }
  if (code === 'DisallowedIntents') {
    return new ConfigError(
      'Discord refused the Message Content intent: enable it for the bot in the Discord developer portal (Bot → Privileged Gateway Intents)',
      { cause: err },
    );
  }
  return new AppError('INTERNAL', `cannot connect to Discord: ${describeError(err)}`, {
    cause: err,
    transient: true,
  });
}
