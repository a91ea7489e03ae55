/**
 * The WhatsApp channel, over the official Cloud API: messages arrive by
 * webhook on the gateway's webhook listener (`/webhooks/whatsapp`), replies
 * go out through the Graph API (graph.ts, plain fetch).
 *
 * The route (webhook.ts) answers Meta's subscription handshake and takes a
 * POST only with a valid `X-Hub-Signature-256` over its raw body (401
 * otherwise, and nothing is read from it). A POST is
 * answered 200 only once every message in it is on the bus (or decided
 * against) and every status in it is recorded; when Redis is away it is
 * answered 503 and Meta delivers it again. A message's inbound id is
 * `whatsapp:<number>:<message id>`, so the mailbox takes a redelivery once
 * (and this process skips ids it took). One sender's messages are handled in
 * arrival order, across POSTs (a photo and the question about it stay in
 * order while the photo downloads). Status callbacks (sent, delivered, read,
 * failed) are recorded in Redis, never taken as messages; a failed send is
 * listed by `magpie status`. While a turn runs, the message it answers is
 * marked read and the typing indicator shown (renewed every
 * `typingIntervalMs`; WhatsApp shows one for up to 25 s). WhatsApp cannot
 * edit messages: replies are sent whole, and there is no `preview`.
 */
import { AppError, ConfigError, describeError } from '../../errors/index.js';
import { runAll } from '../../lifecycle/run-all.js';
import type { Logger } from '../../log/index.js';
import type { Media, OutboundMessage } from '../../messages/messages.js';
import { spokenAudio } from '../../voice/outbound-audio.js';
import { AccessControl } from '../access.js';
import { busIntakePorts, intake } from '../intake.js';
import { LruMap } from '../lru-map.js';
import { pairingText } from '../pairing-text.js';
import { decidePress, type Press } from '../press.js';
import { SendProgress } from '../send-progress.js';
import type { Channel, ChannelDeps } from '../types.js';
import { TypingLoop } from '../typing.js';
import type { WebhookRoutes } from '../webhooks.js';
import { WHATSAPP_API_ROOT, WHATSAPP_WEBHOOK_PATH } from './api-root.js';
import { GraphClient, GraphError, graphFailure } from './graph.js';
import {
  decideMessage,
  readNotification,
  type WaMessage,
  type WaNotification,
  type WaStatus,
} from './inbound.js';
import { fetchMedia } from './media.js';
import { deliverMessage, deliverVoice, failureReason } from './sender.js';
import type { WhatsAppStore } from './store.js';
import { whatsappWebhook } from './webhook.js';

/** Tunables (tests shorten them); everything else comes from the deps. */
export interface WhatsAppChannelOptions {
  /** Time between typing indicators while a turn runs. @defaultValue 10000 */
  typingIntervalMs?: number;
  /** The largest webhook body taken (Meta's are up to 3 MB). @defaultValue 3 MiB */
  maxBodyBytes?: number;
  /** Per-download time limit for media. @defaultValue 30000 */
  mediaTimeoutMs?: number;
}

/** What the channel gets beside the shared deps: its Redis store and the gateway's webhook listener. */
export interface WhatsAppChannelParts {
  store: WhatsAppStore;
  webhooks: WebhookRoutes;
}

/** Ids of taken messages remembered (a redelivery is skipped before it reaches the bus). */
const TAKEN_KEPT = 5000;

/** A Channel over the WhatsApp Cloud API. Built by the descriptor (`whatsappChannel.create`). */
export class WhatsAppChannel implements Channel {
  readonly name = 'whatsapp';
  private readonly deps: ChannelDeps;
  private readonly logger: Logger;
  private readonly graph: GraphClient;
  private readonly store: WhatsAppStore;
  private readonly webhooks: WebhookRoutes;
  private readonly access: AccessControl;
  private readonly appSecret: string;
  private readonly verifyToken: string;
  private readonly phoneNumberId: string;
  private readonly maxBodyBytes: number;
  private readonly mediaTimeoutMs: number | undefined;
  private readonly typing: TypingLoop;
  private readonly progress = new SendProgress();
  private readonly taken = new LruMap<string, true>(TAKEN_KEPT);
  /** Per chat: the newest message taken (marked read, and the typing indicator's message). */
  private readonly lastInbound = new LruMap<string, string>(5000);
  /** Per sender: the end of the chain its messages are handled on, in arrival order. */
  private readonly chains = new Map<string, Promise<void>>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly warned = new Map<string, number>();
  private unmount: (() => void) | undefined;
  private closed = false;
  private stopping: Promise<void> | undefined;

  constructor(deps: ChannelDeps, parts: WhatsAppChannelParts, options: WhatsAppChannelOptions = {}) {
    const settings = deps.config.channels.whatsapp;
    const missing = (variable: string, what: string) =>
      new ConfigError(`${variable} is not set: ${what} (README "WhatsApp")`);
    if (!settings.accessToken) throw missing('WHATSAPP_ACCESS_TOKEN', 'the access token of your Meta app');
    if (!settings.phoneNumberId)
      throw missing('WHATSAPP_PHONE_NUMBER_ID', 'the id of the business number (WhatsApp → API Setup)');
    if (!settings.appSecret)
      throw missing('WHATSAPP_APP_SECRET', "the app secret, which every webhook's signature is checked with");
    if (!settings.verifyToken)
      throw missing('WHATSAPP_VERIFY_TOKEN', 'a random text you also give Meta with the webhook URL');
    if (parts.webhooks.port === undefined) {
      throw new ConfigError(
        'MAGPIE_WEBHOOK_PORT is not set: WhatsApp tells magpie about messages by webhook, served on that port (README "WhatsApp")',
      );
    }
    this.deps = deps;
    this.logger = deps.logger.child({ channel: 'whatsapp' });
    this.store = parts.store;
    this.webhooks = parts.webhooks;
    this.appSecret = settings.appSecret;
    this.verifyToken = settings.verifyToken;
    this.phoneNumberId = settings.phoneNumberId;
    this.maxBodyBytes = options.maxBodyBytes ?? 3 * 1024 * 1024;
    this.mediaTimeoutMs = options.mediaTimeoutMs;
    this.graph = new GraphClient({
      root: settings.apiRoot ?? WHATSAPP_API_ROOT,
      token: settings.accessToken,
      phoneNumberId: settings.phoneNumberId,
    });
    this.typing = new TypingLoop({ logger: this.logger, intervalMs: options.typingIntervalMs ?? 10_000 });
    this.access = new AccessControl({
      channel: 'whatsapp',
      allowFrom: settings.allowFrom,
      pairing: deps.pairing,
    });
  }

  /**
   * Checks the token against the phone number id (a refusal stops the start with one clear
   * line; Meta being unreachable only warns), then mounts the webhook route.
   */
  async start(): Promise<void> {
    try {
      const number = await this.graph.phoneNumber();
      this.logger.info({ number: number.number, name: number.name }, 'whatsapp number found');
    } catch (err) {
      if (err instanceof GraphError && err.status >= 400 && err.status < 500) {
        throw new ConfigError(
          `WhatsApp refused the access token or phone number id (${graphFailure(err)}): check WHATSAPP_ACCESS_TOKEN and WHATSAPP_PHONE_NUMBER_ID in .env`,
          { cause: err },
        );
      }
      this.logger.warn({ err: graphFailure(err) }, 'whatsapp number not checked (Graph API unreachable?)');
    }
    const route = whatsappWebhook({
      appSecret: this.appSecret,
      verifyToken: this.verifyToken,
      logger: this.logger,
      warn: (kind, text) => this.warnAtMostOnceAMinute(kind, text),
      take: (body) => this.whileRunning(() => this.take(body)),
    });
    this.unmount = this.webhooks.mount(WHATSAPP_WEBHOOK_PATH, route, { maxBodyBytes: this.maxBodyBytes });
    this.logger.info({ path: WHATSAPP_WEBHOOK_PATH }, 'whatsapp webhook route mounted');
  }

  /** Stops taking webhooks (Meta delivers them again later), waits for those in hand, stops typing. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= runAll([
      () => {
        this.closed = true;
        this.unmount?.();
      },
      async () => {
        await Promise.allSettled([...this.inFlight]);
      },
      () => this.typing.stopAll(),
    ]);
    return this.stopping;
  }

  async send(message: OutboundMessage): Promise<void> {
    if (message.kind !== 'message') this.stopActivity(message.chatId);
    const audio = spokenAudio(message);
    if (audio) {
      await deliverVoice(this.graph, message.chatId, audio.bytes);
      this.logger.debug(
        { id: message.id, to: message.chatId, seconds: audio.durationSeconds },
        'whatsapp voice delivered',
      );
      return;
    }
    if (message.content.trim() === '') return;
    const sent = this.progress.sent(message.id);
    const total = await deliverMessage(this.graph, message, sent, (index) =>
      this.progress.record(message.id, index + 1),
    );
    this.progress.finish(message.id);
    this.logger.debug({ id: message.id, to: message.chatId, parts: total }, 'whatsapp message delivered');
  }

  /** Marks the chat's newest message read with the typing indicator, renewed until the reply. */
  startActivity(chatId: string): void {
    if (!this.lastInbound.get(chatId)) return;
    this.typing.start(chatId, async () => {
      const messageId = this.lastInbound.get(chatId);
      if (messageId) await this.graph.markRead(messageId, true);
    });
  }

  stopActivity(chatId: string): void {
    this.typing.stop(chatId);
  }

  /** Runs `work` unless stopping (then rejects: Meta delivers it again), and lets `stop()` wait for it. */
  private async whileRunning(work: () => Promise<void>): Promise<void> {
    if (this.closed) throw new AppError('INTERNAL', 'the whatsapp channel is stopping', { transient: true });
    const running = work();
    this.inFlight.add(running);
    try {
      await running;
    } finally {
      this.inFlight.delete(running);
    }
  }

  /** Records the statuses, then takes the messages (each sender's in order). Rejects when any could not be taken. */
  private async take(body: WaNotification): Promise<void> {
    const read = readNotification(body, this.phoneNumberId);
    if (read.otherNumbers.length > 0) {
      this.warnAtMostOnceAMinute(
        'number',
        `whatsapp webhook for phone number id ${read.otherNumbers.join(', ')} ignored: WHATSAPP_PHONE_NUMBER_ID is ${this.phoneNumberId}`,
      );
    }
    for (const status of read.statuses) await this.onStatus(status);
    const messages = read.messages.map(({ message, name }) =>
      this.inOrder(message.from ?? '', () => this.onMessage(message, name)),
    );
    const results = await Promise.allSettled(messages);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** A status callback: recorded once; a failure is logged (and listed by `magpie status`). */
  private async onStatus(status: WaStatus): Promise<void> {
    if (!status.id || !status.status) return;
    const error = status.errors?.[0];
    const reason = status.status === 'failed' ? failureReason(error) : undefined;
    const first = await this.store.recordStatus({
      messageId: status.id,
      status: status.status,
      recipient: status.recipient_id ?? '',
      at: Number(status.timestamp) > 0 ? Number(status.timestamp) * 1000 : Date.now(),
      ...(reason ? { reason } : {}),
    });
    if (first && reason)
      this.logger.warn({ to: status.recipient_id, reason }, 'whatsapp reports a send failed');
  }

  /** One message: decided, then published, answered or dropped. A transient failure rejects (503). */
  private async onMessage(message: WaMessage, name: string | undefined): Promise<void> {
    const id = `whatsapp:${message.from}:${message.id}`;
    if (this.taken.get(id)) return;
    try {
      const action = await decideMessage(message, name, { access: this.access });
      switch (action.kind) {
        case 'ignore':
          this.logger.debug({ id: message.id, reason: action.reason }, 'whatsapp message ignored');
          break;
        case 'pairing':
          this.logger.info({ senderId: action.chatId }, 'unknown whatsapp sender: pairing code sent');
          await this.reply(action.chatId, pairingText(action.code));
          break;
        case 'press':
          if (await this.onPress(action.press, message.id ?? '')) this.markRead(message.id);
          break;
        case 'publish': {
          const { message: inbound } = action;
          let media: Media[] | undefined;
          await intake(inbound, {
            publish: async (m) => {
              media ??= await fetchMedia(action.media, {
                graph: this.graph,
                maxBytes: this.deps.config.media.maxBytes,
                logger: this.logger,
                ...(this.mediaTimeoutMs !== undefined ? { timeoutMs: this.mediaTimeoutMs } : {}),
              });
              // Before it is on the bus: the turn's typing indicator names this message.
              this.lastInbound.set(m.chatId, message.id ?? '');
              await this.deps.bus.publishInbound({ ...m, media });
            },
            ...busIntakePorts(this.deps.bus),
            reply: (text) => this.reply(inbound.chatId, text),
          });
          this.markRead(message.id);
        }
      }
    } catch (err) {
      if (!(err instanceof AppError) || err.transient) throw err;
      this.logger.error({ id, err: describeError(err) }, 'whatsapp message failed for good; dropped');
    }
    this.taken.set(id, true);
  }

  /** A reply button pressed (in the message `messageId`): the presser's command, when they may talk to the bot. True when taken. */
  private async onPress(press: Press, messageId: string): Promise<boolean> {
    const decision = await decidePress(press, this.access);
    if (decision.kind === 'ignore') {
      const log = this.logger.child({ press: press.id });
      if (decision.invalid) log.warn({ reason: decision.reason }, 'button press ignored');
      else log.debug({ reason: decision.reason }, 'button press ignored');
      return false;
    }
    await intake(decision.message, {
      publish: (m) => {
        this.lastInbound.set(m.chatId, messageId);
        return this.deps.bus.publishInbound(m);
      },
      ...busIntakePorts(this.deps.bus),
      reply: (text) => this.reply(press.chatId, text),
    });
    return true;
  }

  /** Marks a taken message read (blue ticks); failures are only logged. */
  private markRead(messageId: string | undefined): void {
    if (!messageId) return;
    this.graph
      .markRead(messageId)
      .catch((err: unknown) => this.logger.debug({ err: graphFailure(err) }, 'whatsapp mark read failed'));
  }

  /** A short direct answer (pairing, an at-once command's); failures are logged, not thrown. */
  private async reply(to: string, text: string): Promise<void> {
    try {
      await this.graph.sendMessage({ to, type: 'text', text: { preview_url: false, body: text } });
    } catch (err) {
      this.logger.warn({ to }, `whatsapp reply failed: ${graphFailure(err)}`);
    }
  }

  /** Runs `work` after the earlier work of `key` (one sender's messages in arrival order). */
  private inOrder(key: string, work: () => Promise<void>): Promise<void> {
    const previous = this.chains.get(key) ?? Promise.resolve();
    const next = previous.then(work);
    const tail = next.catch(() => undefined);
    this.chains.set(key, tail);
    void tail.then(() => {
      if (this.chains.get(key) === tail) this.chains.delete(key);
    });
    return next;
  }

  /** A warning that strangers could repeat: logged at most once a minute per kind. */
  private warnAtMostOnceAMinute(kind: string, text: string): void {
    const now = Date.now();
    if (now - (this.warned.get(kind) ?? 0) < 60_000) return;
    this.warned.set(kind, now);
    this.logger.warn(text);
  }
}
