/**
 * The CLI client side (`magpie send`, `magpie chat`): watches a fresh reply
 * address, publishes an InboundMessage on channel `cli`, and waits for the
 * reply, printing mid-turn messages and (when asked) live snapshots as they
 * come. Replies arrive through the address's reply list as well as pub/sub
 * (bus/reply-lists.ts), so a Redis restart while waiting loses none; a message
 * that arrives both ways is taken once, by its id.
 */
import { randomUUID } from 'node:crypto';
import type { Bus } from '../../bus/bus.js';
import { safeJson } from '../../bus/json-topic.js';
import { AppError, ExitCode } from '../../errors/index.js';
import { runAll } from '../../lifecycle/run-all.js';
import { type LiveUpdate, LiveUpdateSchema } from '../../messages/live-update.js';
import {
  type InboundMessageInput,
  type OutboundMessage,
  OutboundMessageSchema,
} from '../../messages/messages.js';
import { busIntakePorts, intake } from '../intake.js';
import { cliChatChannel, cliLiveChannel, replyAddresses } from './cli-channel.js';

export interface SendOptions {
  content: string;
  /** The chat id (session `cli:<chatId>`). @defaultValue 'default' */
  chatId?: string;
  /**
   * How long to wait for the reply, counted from the send and again from each
   * sign of the turn (a snapshot or a mid-turn message). @defaultValue 120000
   */
  timeoutMs?: number;
  /** Called for each mid-turn message (kind `message`), once each. */
  onMessage?: (message: OutboundMessage) => void;
  /**
   * Called with each live snapshot of the answer being written, until the
   * reply. Absent: snapshots are not listened for. @defaultValue none
   */
  onLive?: (update: LiveUpdate) => void;
  /**
   * Where the message is queued (and `/stop` or `/approve` answered) when not on `bus`: another
   * agent's bus (ask_agent, `magpie send --agent`). The answer still comes back through `bus`, the
   * gateway's prefix, where the CLI channel keeps every agent's replies.
   * @defaultValue `bus`
   */
  publishTo?: Pick<Bus, 'publishInbound' | 'cancel' | 'answerApproval'>;
  /**
   * Asks for the answer spoken too (the daemon's MAGPIE_TTS): after the reply, waits for the
   * spoken one (OGG/Opus in `media`, or `metadata.voiceFailed` saying why there is none) and
   * hands it to `onVoice`. @defaultValue none: text only
   */
  onVoice?: (voice: OutboundMessage) => void;
  /** The asking turn's span (W3C trace context): the answering turn continues its trace. @defaultValue none */
  trace?: { traceparent: string; tracestate?: string };
}

/**
 * Sends one message through the bus and resolves with the turn's reply (kind
 * `reply` or `error`). Rejects with TIMEOUT (exit 3) when no daemon answers.
 * The message goes through the intake like any channel's: an at-once command
 * (/stop) is answered here at once ("Stopping." or "Nothing to stop.") and
 * waits for no turn.
 */
export async function sendAndWait(bus: Bus, options: SendOptions): Promise<OutboundMessage> {
  const address = randomUUID();
  const chatId = options.chatId ?? 'default';
  const message = {
    id: `cli:${address}`,
    channel: 'cli',
    chatId,
    senderId: 'cli',
    content: options.content,
    metadata: {
      replyAddress: address,
      ...(options.onVoice ? { voice: true } : {}),
      ...(options.trace ? { trace: options.trace } : {}),
    },
  };
  let reply: OutboundMessage | undefined;
  await intake(message, {
    publish: async (m) => {
      reply = await publishAndWait(bus, m, address, options);
    },
    ...busIntakePorts(options.publishTo ?? bus),
    reply: async (content) => {
      reply = OutboundMessageSchema.parse({ id: `cli:${address}`, channel: 'cli', chatId, content });
    },
  });
  return reply!;
}

/** Watches the reply address, publishes the message and waits for the turn's reply. */
async function publishAndWait(
  bus: Bus,
  message: InboundMessageInput,
  address: string,
  options: SendOptions,
): Promise<OutboundMessage> {
  const wait = new ReplyWait(options.timeoutMs ?? 120_000);
  const voice = options.onVoice ? new ReplyWait(options.timeoutMs ?? 120_000) : undefined;
  const seen = new Set<string>();
  const stops: Array<() => Promise<void>> = [];
  try {
    stops.push(
      await bus.watchCliReplies(address, (payload) => {
        const parsed = OutboundMessageSchema.safeParse(safeJson(payload));
        if (!parsed.success || seen.has(parsed.data.id)) return;
        if (voice && isVoice(parsed.data)) {
          seen.add(parsed.data.id);
          voice.settle(parsed.data);
          return;
        }
        if (wait.settled) return;
        seen.add(parsed.data.id);
        if (parsed.data.kind === 'message') {
          wait.alive();
          options.onMessage?.(parsed.data);
          return;
        }
        wait.settle(parsed.data);
      }),
    );
    const onLive = options.onLive;
    if (onLive) {
      stops.push(
        await bus.subscribe(cliLiveChannel(address), (payload) => {
          const parsed = LiveUpdateSchema.safeParse(safeJson(payload));
          if (wait.settled || !parsed.success) return;
          wait.alive();
          onLive(parsed.data);
        }),
      );
    }
    await (options.publishTo ?? bus).publishInbound(message);
    wait.arm();
    const reply = await wait.reply;
    if (voice && reply.kind === 'reply' && options.onVoice) {
      voice.arm();
      options.onVoice(await voice.reply);
    }
    return reply;
  } finally {
    wait.end();
    voice?.end();
    await runAll(stops);
  }
}

/** A spoken reply, or the word that there is none (src/voice: `<replyId>-voice`). */
function isVoice(message: OutboundMessage): boolean {
  return (
    message.id.endsWith('-voice') &&
    message.content === '' &&
    (message.media !== undefined || 'voiceFailed' in message.metadata)
  );
}

/**
 * The reply being waited for: settled once, with the reply or with TIMEOUT
 * (exit 3) when nothing came for `timeoutMs`, counted again from each sign of the turn.
 */
class ReplyWait {
  readonly reply: Promise<OutboundMessage>;
  /** True once the reply came or the wait ended; later messages are ignored. */
  settled = false;
  readonly #timeoutMs: number;
  #heard = false;
  #timer: NodeJS.Timeout | undefined;
  #resolve: (m: OutboundMessage) => void = () => {};
  #reject: (err: AppError) => void = () => {};

  constructor(timeoutMs: number) {
    this.#timeoutMs = timeoutMs;
    this.reply = new Promise<OutboundMessage>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  /** Starts the wait, or starts it again. */
  arm(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      const seconds = Math.round(this.#timeoutMs / 1000);
      const message = this.#heard
        ? `the answer stopped arriving: nothing more for ${seconds}s`
        : `no daemon answered within ${seconds}s: is \`magpie start\` running?`;
      this.#reject(new AppError('TIMEOUT', message, { exitCode: ExitCode.unavailable }));
    }, this.#timeoutMs);
  }

  /** A sign that the turn is running: the wait starts again. */
  alive(): void {
    this.#heard = true;
    this.arm();
  }

  settle(reply: OutboundMessage): void {
    this.settled = true;
    this.#resolve(reply);
  }

  end(): void {
    this.settled = true;
    clearTimeout(this.#timer);
  }
}

/**
 * Calls `handler` for each message to the chat that answers no request —
 * reminders, helper results, heartbeat news. Replies to requests carry a
 * reply address and reach their asker directly. Resolves with an unsubscribe.
 */
export function onUnsolicited(
  bus: Bus,
  chatId: string,
  handler: (message: OutboundMessage) => void,
): Promise<() => Promise<void>> {
  return bus.subscribe(cliChatChannel(chatId), (payload) => {
    const parsed = OutboundMessageSchema.safeParse(safeJson(payload));
    if (parsed.success && replyAddresses(parsed.data).length === 0) handler(parsed.data);
  });
}
