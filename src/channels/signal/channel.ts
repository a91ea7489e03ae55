/**
 * The Signal channel, through signal-cli's HTTP daemon
 * (`signal-cli -a +NUMBER daemon --http 127.0.0.1:PORT`): messages arrive on
 * its event stream (events.ts, reopened with backoff when signal-cli
 * restarts), are parsed (envelope.ts) and held in arrival order by the
 * PublishBuffer while Redis is away, then decided (inbound.ts) and handed to
 * the intake. Replies, typing, read receipts and attachment reads are
 * JSON-RPC calls (rpc.ts). signal-cli does not deliver an event twice on its
 * own, but a reconnecting stream may replay some: the inbound id
 * (`signal:<sender>:<timestamp>`) makes the bus take each message once, and
 * the adapter skips ids it already published.
 */
import { ConfigError, describeError } from '../../errors/index.js';
import { runAll } from '../../lifecycle/run-all.js';
import type { Logger } from '../../log/index.js';
import type { Media, OutboundMessage } from '../../messages/messages.js';
import { spokenAudio } from '../../voice/outbound-audio.js';
import { AccessControl } from '../access.js';
import { busIntakePorts, intake } from '../intake.js';
import { LruMap } from '../lru-map.js';
import { pairingText } from '../pairing-text.js';
import { PublishBuffer } from '../publish-buffer.js';
import { SendProgress } from '../send-progress.js';
import type { Channel, ChannelDeps } from '../types.js';
import { TypingLoop } from '../typing.js';
import { parseEvent, type SignalEvent } from './envelope.js';
import { SignalEvents } from './events.js';
import { decideEvent, type InboundAction, targetOf } from './inbound.js';
import { attachmentsToMedia } from './media.js';
import { SignalRpc } from './rpc.js';
import { deliverMessage, deliverVoice } from './sender.js';

/** Tunables (tests shorten them); everything else comes from ChannelDeps. */
export interface SignalChannelOptions {
  /** Time between typing indicators (Signal shows one for 15 s). @defaultValue 10000 */
  typingIntervalMs?: number;
  /** Messages held while the bus is away. @defaultValue 1000 */
  bufferCapacity?: number;
  /** First retry delay of held messages. @defaultValue 200 */
  bufferRetryMs?: number;
  /** First delay before the event stream is opened again. @defaultValue 500 */
  reconnectMs?: number;
  /** start() gives up when the event stream is not open by then. @defaultValue 30000 */
  openTimeoutMs?: number;
}

/** A received event and, once decided, what to do with it. */
interface Received {
  event: SignalEvent;
  action?: InboundAction;
  /** The attachments, once read (a retried publish does not read them again). */
  media?: Media[];
}

/** A Channel over signal-cli's JSON-RPC daemon. Built by the descriptor (`signalChannel.create`). */
export class SignalChannel implements Channel {
  readonly name = 'signal';
  private readonly deps: ChannelDeps;
  private readonly logger: Logger;
  private readonly account: string;
  private readonly rpc: SignalRpc;
  private readonly events: SignalEvents;
  private readonly access: AccessControl;
  private readonly typing: TypingLoop;
  private readonly buffer: PublishBuffer<Received>;
  private readonly progress = new SendProgress();
  private readonly openTimeoutMs: number;
  /** The ids that are magpie: SIGNAL_ACCOUNT and, once learnt, its ACI. */
  private readonly self: Set<string>;
  /** Inbound ids published (a replayed event is not handled again). */
  private readonly taken = new LruMap<string, true>(5000);
  private stopping: Promise<void> | undefined;

  constructor(deps: ChannelDeps, options: SignalChannelOptions = {}) {
    const settings = deps.config.channels.signal;
    if (!settings.rpcUrl)
      throw new ConfigError('SIGNAL_RPC_URL is not set: put signal-cli’s daemon address in .env');
    if (!settings.account)
      throw new ConfigError('SIGNAL_ACCOUNT is not set: put the Signal number (+…) signal-cli uses in .env');
    this.deps = deps;
    this.account = settings.account;
    this.logger = deps.logger.child({ channel: 'signal' });
    this.self = new Set([settings.account]);
    this.openTimeoutMs = options.openTimeoutMs ?? 30_000;
    this.rpc = new SignalRpc({ url: settings.rpcUrl, account: settings.account });
    this.events = new SignalEvents({
      url: settings.rpcUrl,
      account: settings.account,
      logger: this.logger,
      onEvent: (data) => this.receive(data),
      ...(options.reconnectMs !== undefined ? { initialDelayMs: options.reconnectMs } : {}),
    });
    this.access = new AccessControl({
      channel: 'signal',
      allowFrom: settings.allowFrom,
      pairing: deps.pairing,
    });
    this.typing = new TypingLoop({ logger: this.logger, intervalMs: options.typingIntervalMs ?? 10_000 });
    this.buffer = new PublishBuffer<Received>({
      publish: (received) => this.handle(received),
      idOf: (received) =>
        `${received.event.envelope.sourceUuid ?? received.event.envelope.sourceNumber}:${received.event.envelope.timestamp}`,
      logger: this.logger,
      label: 'signal',
      capacity: options.bufferCapacity ?? 1000,
      initialDelayMs: options.bufferRetryMs ?? 200,
    });
  }

  /** Checks the daemon (`version`), learns the account's ACI, then opens the event stream. */
  async start(): Promise<void> {
    let version: string;
    try {
      version = (await this.rpc.call<{ version?: string }>('version'))?.version ?? '?';
    } catch (err) {
      throw new ConfigError(
        `cannot reach signal-cli at ${this.rpc.endpoint} (${describeError(err)}): start its daemon (signal-cli -a ${this.account} daemon --http 127.0.0.1:PORT) and check SIGNAL_RPC_URL`,
        { cause: err },
      );
    }
    await this.learnAci();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new ConfigError(`signal-cli's event stream did not open within ${this.openTimeoutMs} ms`)),
        this.openTimeoutMs,
      );
    });
    try {
      await Promise.race([this.events.open(), timeout]);
    } catch (err) {
      this.events.close();
      throw err;
    } finally {
      clearTimeout(timer);
    }
    this.logger.info({ version, account: this.account }, 'signal connected (signal-cli daemon)');
  }

  /** Received messages waiting for the bus (held while Redis is away). */
  get heldMessages(): number {
    return this.buffer.size;
  }

  /** Event streams opened so far (1 until signal-cli restarts). */
  get streamOpens(): number {
    return this.events.opens;
  }

  /** Stops intake, typing and the held messages; every step runs. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= runAll([
      () => this.events.close(),
      () => this.typing.stopAll(),
      () => this.buffer.close(),
    ]);
    return this.stopping;
  }

  async send(message: OutboundMessage): Promise<void> {
    if (message.kind !== 'message') this.stopActivity(message.chatId);
    const audio = spokenAudio(message);
    if (audio) {
      await deliverVoice(this.rpc, message.chatId, audio.bytes);
      this.logger.debug({ id: message.id, seconds: audio.durationSeconds }, 'signal voice delivered');
      return;
    }
    if (message.content.trim() === '') return;
    const sent = this.progress.sent(message.id);
    const total = await deliverMessage(this.rpc, message, sent, (index) =>
      this.progress.record(message.id, index + 1),
    );
    this.progress.finish(message.id);
    this.logger.debug({ id: message.id, parts: total }, 'signal message delivered');
  }

  /** Typing in the chat, repeated until the reply (Signal shows one for 15 s). */
  startActivity(chatId: string): void {
    this.typing.start(chatId, () => this.rpc.call('sendTyping', targetOf(chatId)));
  }

  stopActivity(chatId: string): void {
    if (!this.typing.isActive(chatId)) return;
    this.typing.stop(chatId);
    void this.rpc
      .call('sendTyping', { ...targetOf(chatId), stop: true })
      .catch((err: unknown) => this.logger.debug({ err: describeError(err) }, 'signal typing stop not sent'));
  }

  /** One event's data: parsed (a malformed one is logged and dropped), then held for the bus. */
  private receive(data: string): void {
    const parsed = parseEvent(data);
    if (!parsed.ok) {
      this.logger.warn({ reason: parsed.reason }, 'signal event ignored');
      return;
    }
    this.buffer.push({ event: parsed.event });
  }

  /**
   * Handles one event; the buffer calls this in arrival order and retries it while Redis is
   * away. The decision and the read attachments are kept, so a retry repeats only what failed.
   */
  private async handle(received: Received): Promise<void> {
    received.action ??= await decideEvent(received.event, { self: this.self, access: this.access });
    const action = received.action;
    switch (action.kind) {
      case 'ignore':
        this.logger.trace({ reason: action.reason }, 'signal event ignored');
        return;
      case 'pairing':
        this.logger.info({ chatId: action.chatId }, 'unknown signal sender: pairing code sent');
        await this.reply(action.chatId, pairingText(action.code));
        return;
      case 'publish': {
        const { message } = action;
        if (this.taken.get(message.id)) return;
        await intake(message, {
          publish: async (inbound) => {
            received.media ??= await attachmentsToMedia(
              action.attachments,
              { chatId: message.chatId, senderId: message.senderId ?? '' },
              { rpc: this.rpc, maxBytes: this.deps.config.media.maxBytes, logger: this.logger },
            );
            await this.deps.bus.publishInbound({ ...inbound, media: received.media });
          },
          ...busIntakePorts(this.deps.bus),
          reply: (text) => this.reply(message.chatId, text),
        });
        this.taken.set(message.id, true);
        if (!message.isGroup) this.markRead(message.senderId ?? '', received.event.envelope.timestamp);
      }
    }
  }

  /** A read receipt for a message taken (best effort). */
  private markRead(sender: string, timestamp: number): void {
    void this.rpc
      .call('sendReceipt', { recipient: sender, targetTimestamp: [timestamp], type: 'read' })
      .catch((err: unknown) =>
        this.logger.debug({ err: describeError(err) }, 'signal read receipt not sent'),
      );
  }

  /** The account's ACI (uuid), so a mention or quote naming only it is known as magpie's. Best effort. */
  private async learnAci(): Promise<void> {
    try {
      const status = await this.rpc.call<Array<{ uuid?: unknown }>>('getUserStatus', {
        recipient: [this.account],
      });
      const uuid = Array.isArray(status) ? status[0]?.uuid : undefined;
      if (typeof uuid === 'string' && uuid !== '') this.self.add(uuid);
    } catch (err) {
      this.logger.debug(
        { err: describeError(err) },
        "signal account's ACI not learnt: mentions by number only",
      );
    }
  }

  /** A short direct answer (pairing, an at-once command's); failures are logged, not thrown. */
  private async reply(chatId: string, text: string): Promise<void> {
    try {
      await this.rpc.call('send', { ...targetOf(chatId), message: text });
    } catch (err) {
      this.logger.warn({ err: describeError(err) }, 'signal reply failed');
    }
  }
}
