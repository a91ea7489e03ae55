/**
 * The Slack channel, in Socket Mode over @slack/bolt's SocketModeReceiver and
 * Web client. Bolt's App acknowledges an Events API envelope before its
 * listeners run, which would lose a message whenever Redis is away, so the
 * adapter listens on the receiver's Socket Mode client itself: envelopes are
 * handled one at a time in arrival order and acknowledged only once the
 * message is on the bus (or decided against); an envelope not acknowledged is
 * delivered again by Slack, and its inbound id (`slack:<channel>:<ts>`) makes
 * the mailbox take it once. A `block_actions` press is read into a Press,
 * published, its buttons taken off the message (chat.update), then
 * acknowledged. While a turn runs, the message it answers wears a reaction.
 */
import { type LogLevel, type Logger as SlackLogger, SocketModeReceiver, webApi } from '@slack/bolt';
import { streamsTo } from '../../config/index.js';
import { AppError, ConfigError, describeError } from '../../errors/index.js';
import { runAll } from '../../lifecycle/run-all.js';
import type { Logger } from '../../log/index.js';
import type { LiveUpdate } from '../../messages/live-update.js';
import type { Media, OutboundMessage } from '../../messages/messages.js';
import { spokenAudio } from '../../voice/outbound-audio.js';
import { AccessControl, type Sender } from '../access.js';
import { busIntakePorts, intake } from '../intake.js';
import { LiveRenderer } from '../live/renderer.js';
import { MemoryLiveRecords } from '../live/surface.js';
import { LruMap } from '../lru-map.js';
import { pairingText } from '../pairing-text.js';
import { decidePress } from '../press.js';
import { SendProgress } from '../send-progress.js';
import type { Channel, ChannelDeps } from '../types.js';
import { SLACK_API_ROOT } from './api-root.js';
import { type BlockActionsPayload, pressOf } from './buttons.js';
import { decideMessage, type SlackMessageEvent } from './inbound.js';
import { SlackLiveSurface } from './live.js';
import { filesToMedia } from './media.js';
import { deliverMessage, deliverVoice } from './sender.js';

/** Tunables (tests shorten them); everything else comes from ChannelDeps. */
export interface SlackChannelOptions {
  /** Least time between two edits of a live reply. @defaultValue 1200 */
  editIntervalMs?: number;
  /** The reaction a message wears while its turn runs. @defaultValue 'hourglass_flowing_sand' */
  workingReaction?: string;
}

/** One Socket Mode envelope as the client emits it. */
interface Envelope {
  ack: () => Promise<void>;
  envelope_id: string;
  type: string;
  body: Record<string, unknown>;
  retry_num?: number;
}

/** A Channel over Slack's Socket Mode. Built by the descriptor (`slackChannel.create`). */
export class SlackChannel implements Channel {
  readonly name = 'slack';
  private readonly deps: ChannelDeps;
  private readonly logger: Logger;
  private readonly token: string;
  private readonly web: webApi.WebClient;
  private readonly receiver: SocketModeReceiver;
  private readonly access: AccessControl;
  private readonly live: LiveRenderer<string> | undefined;
  private readonly progress = new SendProgress();
  private readonly workingReaction: string;
  /** Event and press ids taken (a Slack retry of one is acknowledged at once). */
  private readonly taken = new LruMap<string, true>(5000);
  /** Channel threads magpie takes part in (`<channel>/<thread_ts>`). */
  private readonly threads = new LruMap<string, true>(5000);
  /** Sender names by user id (users.info). */
  private readonly senders = new LruMap<string, Sender>(1000);
  /** Per conversation (`<channel>[/<thread>]`): the last message published, which wears the working reaction. */
  private readonly lastMessage = new LruMap<string, { channel: string; ts: string }>(5000);
  private readonly reacting = new Map<string, { channel: string; ts: string }>();
  private queue: Promise<void> = Promise.resolve();
  private botUserId = '';
  private stopping: Promise<void> | undefined;

  constructor(deps: ChannelDeps, options: SlackChannelOptions = {}) {
    const settings = deps.config.channels.slack;
    if (!settings.token)
      throw new ConfigError('SLACK_BOT_TOKEN is not set: put the bot token (xoxb-…) in .env');
    if (!settings.appToken)
      throw new ConfigError('SLACK_APP_TOKEN is not set: put the app-level token (xapp-…) in .env');
    this.deps = deps;
    this.token = settings.token;
    this.logger = deps.logger.child({ channel: 'slack' });
    this.workingReaction = options.workingReaction ?? 'hourglass_flowing_sand';
    const slackApiUrl = settings.apiRoot ?? SLACK_API_ROOT;
    const logger = slackLogger(this.logger);
    this.web = new webApi.WebClient(settings.token, {
      slackApiUrl,
      logger,
      rejectRateLimitedCalls: true,
      retryConfig: { retries: 2, factor: 2, minTimeout: 200, maxTimeout: 2000 },
    });
    this.receiver = new SocketModeReceiver({
      appToken: settings.appToken,
      logger,
      installerOptions: { clientOptions: { slackApiUrl } },
    });
    this.receiver.client.on('slack_event', (envelope: Envelope) => {
      this.queue = this.queue.then(() => this.onEnvelope(envelope));
    });
    this.live = streamsTo(deps.config, this.name)
      ? new LiveRenderer({
          channel: this.name,
          surface: new SlackLiveSurface({
            web: this.web,
            ...(options.editIntervalMs !== undefined ? { editIntervalMs: options.editIntervalMs } : {}),
          }),
          records: deps.bus.liveRecords ?? new MemoryLiveRecords(),
          logger: this.logger,
        })
      : undefined;
    this.access = new AccessControl({
      channel: 'slack',
      allowFrom: settings.allowFrom,
      pairing: deps.pairing,
    });
  }

  /** Checks the bot token (auth.test), then opens the Socket Mode connection. Rejects with one clear AppError. */
  async start(): Promise<void> {
    try {
      const auth = await this.web.auth.test();
      this.botUserId = auth.user_id ?? '';
      await this.receiver.client.start();
    } catch (err) {
      await this.receiver.client.disconnect().catch(() => undefined);
      throw toStartError(err);
    }
    this.logger.info({ bot: this.botUserId }, 'slack connected (Socket Mode)');
  }

  /** Stops intake (nothing more is acknowledged), then the connection; every step runs. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= runAll([
      () => this.receiver.client.removeAllListeners('slack_event'),
      () => this.queue,
      () => this.receiver.client.disconnect(),
    ]);
    return this.stopping;
  }

  async preview(update: LiveUpdate): Promise<void> {
    this.live?.update(update);
  }

  async send(message: OutboundMessage): Promise<void> {
    if (message.kind !== 'message') this.stopActivity(message.chatId, message.threadId);
    if (message.live && this.live && (await this.live.finish(message))) return;
    const audio = spokenAudio(message);
    if (audio) {
      await deliverVoice(this.web, message, audio.bytes);
      this.logger.debug({ id: message.id, channel: message.chatId }, 'slack voice delivered');
      return;
    }
    if (message.content.trim() === '') return;
    const sent = this.progress.sent(message.id);
    const total = await deliverMessage(this.web, message, sent, (index) =>
      this.progress.record(message.id, index + 1),
    );
    this.progress.finish(message.id);
    this.logger.debug({ id: message.id, channel: message.chatId, parts: total }, 'slack message delivered');
  }

  /** The conversation's last message wears the working reaction until the reply. */
  startActivity(chatId: string, threadId?: string): void {
    const key = threadId ? `${chatId}/${threadId}` : chatId;
    const target = this.lastMessage.get(key);
    if (!target || this.reacting.has(key)) return;
    this.reacting.set(key, target);
    void this.web.reactions
      .add({ channel: target.channel, timestamp: target.ts, name: this.workingReaction })
      .catch((err: unknown) => this.logger.debug({ err: describeError(err) }, 'slack reaction not added'));
  }

  stopActivity(chatId: string, threadId?: string): void {
    const key = threadId ? `${chatId}/${threadId}` : chatId;
    const target = this.reacting.get(key);
    if (!target) return;
    this.reacting.delete(key);
    void this.web.reactions
      .remove({ channel: target.channel, timestamp: target.ts, name: this.workingReaction })
      .catch((err: unknown) => this.logger.debug({ err: describeError(err) }, 'slack reaction not removed'));
  }

  /** One envelope: handled, then acknowledged; one that could not be put on the bus is not acknowledged. */
  private async onEnvelope(envelope: Envelope): Promise<void> {
    const log = this.logger.child({ envelope: envelope.envelope_id, retry: envelope.retry_num });
    try {
      if (envelope.type === 'events_api') await this.onEvent(envelope.body);
      else if (envelope.type === 'interactive' && envelope.body['type'] === 'block_actions')
        await this.onPress(envelope.body as unknown as BlockActionsPayload);
    } catch (err) {
      if (!(err instanceof AppError) || err.transient) {
        log.warn(
          { err: describeError(err) },
          'slack envelope not taken (bus away?): left unacknowledged for Slack to deliver again',
        );
        return;
      }
      log.error({ err: describeError(err) }, 'slack envelope failed for good; acknowledged and dropped');
    }
    await envelope.ack().catch((err: unknown) => log.warn({ err: describeError(err) }, 'slack ack not sent'));
  }

  private async onEvent(body: Record<string, unknown>): Promise<void> {
    const eventId = String(body['event_id'] ?? '');
    if (eventId !== '' && this.taken.get(eventId)) return;
    const event = body['event'] as SlackMessageEvent;
    const action = await decideMessage(event, {
      botUserId: this.botUserId,
      access: this.access,
      senderOf: (user) => this.senderOf(user),
      inThread: (channel, ts) => this.threads.get(`${channel}/${ts}`) === true,
    });
    const reply = (text: string) =>
      action.kind === 'ignore' ? Promise.resolve() : this.reply(action.channel, action.threadTs, text);
    switch (action.kind) {
      case 'ignore':
        this.logger.trace({ eventId, reason: action.reason }, 'slack event ignored');
        break;
      case 'pairing':
        this.logger.info({ senderId: event.user }, 'unknown slack sender: pairing code sent');
        await reply(pairingText(action.code));
        break;
      case 'publish': {
        const { message } = action;
        let media: Media[] | undefined;
        await intake(message, {
          publish: async (inbound) => {
            media ??= await filesToMedia(action.files, {
              maxBytes: this.deps.config.media.maxBytes,
              token: this.token,
              logger: this.logger,
            });
            await this.deps.bus.publishInbound({ ...inbound, media });
            const key = message.threadId ? `${message.chatId}/${message.threadId}` : message.chatId;
            this.lastMessage.set(key, { channel: action.channel, ts: message.platformMessageId ?? '' });
          },
          ...busIntakePorts(this.deps.bus),
          reply,
        });
        if (message.isGroup && message.threadId)
          this.threads.set(`${message.chatId}/${message.threadId}`, true);
      }
    }
    if (eventId !== '') this.taken.set(eventId, true);
  }

  /** A button press: published as the presser's command, then the message's buttons are taken off. */
  private async onPress(payload: BlockActionsPayload): Promise<void> {
    const press = pressOf(payload, this.botUserId);
    if (!press) {
      this.logger.warn('slack block_actions without a user, channel or action: ignored');
      return;
    }
    if (this.taken.get(press.id)) return;
    const decision = await decidePress(press, this.access);
    const log = this.logger.child({ press: press.id });
    if (decision.kind === 'ignore') {
      if (decision.invalid) log.warn({ reason: decision.reason }, 'button press ignored');
      else log.debug({ reason: decision.reason }, 'button press ignored');
      return;
    }
    await intake(decision.message, {
      publish: (message) => this.deps.bus.publishInbound(message),
      ...busIntakePorts(this.deps.bus),
      reply: (text) => this.reply(press.chatId, press.threadId, text),
    });
    this.taken.set(press.id, true);
    await this.removeButtons(press.chatId, payload, log);
  }

  /** chat.update with the message's text and blocks but its buttons (one question, one press). */
  private async removeButtons(channel: string, payload: BlockActionsPayload, log: Logger): Promise<void> {
    const message = payload.message;
    if (!message?.ts) return;
    const blocks = (message.blocks ?? []).filter((b) => b.type !== 'actions');
    try {
      await this.web.chat.update({
        channel,
        ts: message.ts,
        text: message.text ?? '',
        ...(blocks.length > 0 ? { blocks } : {}),
      } as webApi.ChatUpdateArguments);
    } catch (err) {
      log.warn({ err: describeError(err) }, 'slack buttons not removed');
    }
  }

  /** users.info, cached; a failure gives the bare id (the allow list by id still works). */
  private async senderOf(user: string): Promise<Sender> {
    const known = this.senders.get(user);
    if (known) return known;
    let sender: Sender = { id: user };
    try {
      const info = await this.web.users.info({ user });
      const u = info.user;
      const displayName = u?.profile?.display_name || u?.real_name || u?.name;
      sender = {
        id: user,
        ...(u?.name ? { username: u.name } : {}),
        ...(displayName ? { displayName } : {}),
      };
      this.senders.set(user, sender);
    } catch (err) {
      this.logger.debug({ err: describeError(err), user }, 'slack users.info failed');
    }
    return sender;
  }

  /** A short direct answer (pairing, an at-once command's); failures are logged, not thrown. */
  private async reply(channel: string, threadTs: string | undefined, text: string): Promise<void> {
    try {
      await this.web.chat.postMessage({
        channel,
        text: text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'),
        ...(threadTs ? { thread_ts: threadTs } : {}),
      });
    } catch (err) {
      this.logger.warn({ channel }, `slack reply failed: ${describeError(err)}`);
    }
  }
}

/** Slack's logger interface over a pino child (the SDK's chatter at debug). */
function slackLogger(logger: Logger): SlackLogger {
  let level = 'info' as LogLevel;
  return {
    debug: (...msg: unknown[]) => logger.debug(msg.map(String).join(' ')),
    info: (...msg: unknown[]) => logger.debug(msg.map(String).join(' ')),
    warn: (...msg: unknown[]) => logger.warn(msg.map(String).join(' ')),
    error: (...msg: unknown[]) => logger.error(msg.map(String).join(' ')),
    setLevel: (l: LogLevel) => {
      level = l;
    },
    getLevel: () => level,
    setName: () => {},
  };
}

/** One clear error for a failed start. */
function toStartError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const error = (err as { data?: { error?: string } }).data?.error;
  if (error === 'invalid_auth' || error === 'not_authed' || error === 'account_inactive') {
    return new ConfigError(
      `Slack refused a token (${error}): check SLACK_BOT_TOKEN (xoxb-…) and SLACK_APP_TOKEN (xapp-…, with connections:write) in .env`,
      { cause: err },
    );
  }
  return new AppError('INTERNAL', `cannot connect to Slack: ${describeError(err)}`, {
    cause: err,
    transient: true,
  });
}
