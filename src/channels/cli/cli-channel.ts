/**
 * The CLI channel (gateway side): consumes `outbound-cli` and delivers each
 * message to the `magpie send` / `magpie chat` that asked, through its reply
 * address: appended to the address's expiring reply list and published on
 * `<prefix>:cli:<address>` (bus/reply-lists.ts), so a client whose connection
 * dropped still finds it. Live snapshots of an answer being written go, by
 * pub/sub only, to `<prefix>:cli-live:<address>` (a lost one costs nothing:
 * the next snapshot or the final reply covers it). Every message also goes to
 * `<prefix>:cli-chat:<chatId>`, where an open `magpie chat` hears what nobody
 * asked for right then: reminders, helper results.
 */
import type { Bus } from '../../bus/bus.js';
import { channelNames } from '../../bus/keys.js';
import { describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { LiveUpdate } from '../../messages/live-update.js';
import type { OutboundMessage } from '../../messages/messages.js';
import type { Channel } from '../types.js';

/** The pub/sub name (under the bus prefix) where every message to a CLI chat is also published. */
export function cliChatChannel(chatId: string): string {
  return channelNames.cliChat(chatId);
}

/** The pub/sub name (under the bus prefix) where a CLI request's live snapshots are published. */
export function cliLiveChannel(address: string): string {
  return channelNames.cliLive(address);
}

/** The reply addresses an outbound message or live snapshot carries (from the inbound metadata). */
export function replyAddresses(message: Pick<OutboundMessage, 'metadata'>): string[] {
  const many = message.metadata.replyAddresses;
  const one = message.metadata.replyAddress;
  const all = Array.isArray(many) ? many.filter((a): a is string => typeof a === 'string') : [];
  if (typeof one === 'string' && !all.includes(one)) all.push(one);
  return all;
}

export class CliChannel implements Channel {
  readonly name = 'cli';

  constructor(private readonly options: { bus: Bus; logger: Logger }) {}

  async start(): Promise<void> {}

  async stop(): Promise<void> {}

  /**
   * Stores and publishes the message for every asker; a client that gave up is not an error.
   * The chat's publish and each asker's reply go out together on the bus's one connection: Redis
   * runs them in this order, and the delivery waits one round trip instead of one per write.
   */
  async send(message: OutboundMessage): Promise<void> {
    const { bus, logger } = this.options;
    const payload = JSON.stringify(message);
    const addresses = replyAddresses(message);
    const [listeners, ...receivers] = await Promise.all([
      bus.publish(cliChatChannel(message.chatId), payload),
      ...addresses.map((address) => bus.pushCliReply(address, payload)),
    ]);
    if (addresses.length === 0 && listeners === 0) {
      logger.debug({ id: message.id, chat: message.chatId }, 'no cli client open for this chat');
    }
    if (receivers.includes(0))
      logger.debug({ id: message.id }, 'no cli client listening now; the reply list keeps it');
  }

  /** Forwards a snapshot to the clients waiting on the turn. Never throws. */
  async preview(update: LiveUpdate): Promise<void> {
    const payload = JSON.stringify(update);
    for (const address of replyAddresses(update)) {
      try {
        await this.options.bus.publish(cliLiveChannel(address), payload);
      } catch (err) {
        this.options.logger.debug(
          { err: describeError(err), turn: update.turn },
          'live snapshot not forwarded',
        );
      }
    }
  }

  startActivity(_chatId: string, _threadId?: string): void {}

  stopActivity(_chatId: string, _threadId?: string): void {}
}
