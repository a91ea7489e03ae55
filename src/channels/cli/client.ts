/**
 * The CLI client side (`magpie send`, `magpie chat`): subscribes to a fresh
 * reply address, publishes an InboundMessage on channel `cli`, and waits for
 * the reply (printing mid-turn messages as they come).
 */
import { randomUUID } from 'node:crypto';
import { safeJson } from '../../bus/activity.js';
import type { Bus } from '../../bus/bus.js';
import { type OutboundMessage, OutboundMessageSchema, sessionKeyOf } from '../../bus/messages.js';
import { stopReply } from '../../commands/list.js';
import { isStopCommand } from '../../commands/parse.js';
import { AppError, ExitCode } from '../../errors/index.js';
import { cliChatChannel, cliReplyChannel, replyAddresses } from './cli-channel.js';

export interface SendOptions {
  content: string;
  /** The chat id (session `cli:<chatId>`). @defaultValue 'default' */
  chatId?: string;
  /** How long to wait for the reply. @defaultValue 120000 */
  timeoutMs?: number;
  /** Called for each mid-turn message (kind `message`). */
  onMessage?: (message: OutboundMessage) => void;
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
  const reply = new Promise<OutboundMessage>((resolve) => {
    settle = resolve;
  });
  const unsubscribe = await bus.subscribe(cliReplyChannel(address), (payload) => {
    const parsed = OutboundMessageSchema.safeParse(safeJson(payload));
    if (!parsed.success) return;
    if (parsed.data.kind === 'message') options.onMessage?.(parsed.data);
    else settle?.(parsed.data);
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await bus.publishInbound({
      id: `cli:${address}`,
      channel: 'cli',
      chatId,
      senderId: 'cli',
      content: options.content,
      metadata: { replyAddress: address },
    });
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const seconds = Math.round(timeoutMs / 1000);
        reject(
          new AppError('TIMEOUT', `no daemon answered within ${seconds}s: is \`magpie start\` running?`, {
            exitCode: ExitCode.unavailable,
          }),
        );
      }, timeoutMs);
    });
    return await Promise.race([reply, timedOut]);
  } finally {
    clearTimeout(timer);
    await unsubscribe();
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
