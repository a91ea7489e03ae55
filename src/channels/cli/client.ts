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
import { stopReply } from '../../commands/list.js';
import { isStopCommand } from '../../commands/parse.js';
import { AppError, ExitCode } from '../../errors/index.js';
import { runAll } from '../../lifecycle/run-all.js';
import { type LiveUpdate, LiveUpdateSchema } from '../../messages/live-update.js';
import { type OutboundMessage, OutboundMessageSchema, sessionKeyOf } from '../../messages/messages.js';
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
}

/**
 * Sends one message through the bus and resolves with the turn's reply (kind
 * `reply` or `error`). Rejects with TIMEOUT (exit 3) when no daemon answers.
 * A /stop (src/commands' rule) cancels the chat's running turn instead and
 * resolves with "Stopping." or "Nothing to stop.".
 */
export async function sendAndWait(bus: Bus, options: SendOptions): Promise<OutboundMessage> {
  const address = randomUUID();
  const chatId = options.chatId ?? 'default';
  // /stop needs no turn: cancel here and answer at once, as the chat channels do.
  if (isStopCommand(options.content)) {
    const stopped = await bus.cancel(sessionKeyOf({ channel: 'cli', chatId }));
    return OutboundMessageSchema.parse({
      id: `cli:${address}`,
      channel: 'cli',
      chatId,
      content: stopReply(stopped),
    });
  }
  const timeoutMs = options.timeoutMs ?? 120_000;
  let settle: ((m: OutboundMessage) => void) | undefined;
  let fail: ((err: AppError) => void) | undefined;
  const reply = new Promise<OutboundMessage>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  let settled = false;
  let heard = false;
  let timer: NodeJS.Timeout | undefined;
  const armTimer = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const seconds = Math.round(timeoutMs / 1000);
      const message = heard
        ? `the answer stopped arriving: nothing more for ${seconds}s`
        : `no daemon answered within ${seconds}s: is \`magpie start\` running?`;
      fail?.(new AppError('TIMEOUT', message, { exitCode: ExitCode.unavailable }));
    }, timeoutMs);
  };
  /** A sign that the turn is running: the wait starts again. */
  const alive = () => {
    heard = true;
    armTimer();
  };
  const seen = new Set<string>();
  const stops: Array<() => Promise<void>> = [];
  try {
    stops.push(
      await bus.watchCliReplies(address, (payload) => {
        const parsed = OutboundMessageSchema.safeParse(safeJson(payload));
        if (settled || !parsed.success || seen.has(parsed.data.id)) return;
        seen.add(parsed.data.id);
        if (parsed.data.kind === 'message') {
          alive();
          options.onMessage?.(parsed.data);
          return;
        }
        settled = true;
        settle?.(parsed.data);
      }),
    );
    const onLive = options.onLive;
    if (onLive) {
      stops.push(
        await bus.subscribe(cliLiveChannel(address), (payload) => {
          const parsed = LiveUpdateSchema.safeParse(safeJson(payload));
          if (settled || !parsed.success) return;
          alive();
          onLive(parsed.data);
        }),
      );
    }
    await bus.publishInbound({
      id: `cli:${address}`,
      channel: 'cli',
      chatId,
      senderId: 'cli',
      content: options.content,
      metadata: { replyAddress: address },
    });
    armTimer();
    return await reply;
  } finally {
    settled = true;
    clearTimeout(timer);
    await runAll(stops);
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
