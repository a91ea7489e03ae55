/**
 * The CLI channel (gateway side): consumes `outbound-cli` and publishes each
 * message to `<prefix>:cli:<replyAddress>`, where the waiting `magpie send` /
 * `magpie chat` subscribed before it published its message. Every message
 * also goes to `<prefix>:cli-chat:<chatId>`, where an open `magpie chat`
 * hears what nobody asked for right then: reminders, helper results.
 */
import type { Bus } from '../../bus/bus.js';
import type { OutboundMessage } from '../../bus/messages.js';
import type { Logger } from '../../log/index.js';
import type { Channel } from '../types.js';

/** The pub/sub name (under the bus prefix) a CLI client listens on. */
export function cliReplyChannel(address: string): string {
  return `cli:${address}`;
}

/** The pub/sub name (under the bus prefix) where every message to a CLI chat is also published. */
export function cliChatChannel(chatId: string): string {
  return `cli-chat:${chatId}`;
}

/** The reply addresses an outbound message carries (from the inbound metadata). */
export function replyAddresses(message: OutboundMessage): string[] {
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

  /** Publishes to every waiting client; a client that gave up is not an error. */
  async send(message: OutboundMessage): Promise<void> {
    const payload = JSON.stringify(message);
    const listeners = await this.options.bus.publish(cliChatChannel(message.chatId), payload);
    const addresses = replyAddresses(message);
    if (addresses.length === 0 && listeners === 0) {
      this.options.logger.debug({ id: message.id, chat: message.chatId }, 'no cli client open for this chat');
    }
    for (const address of addresses) {
      const receivers = await this.options.bus.publish(cliReplyChannel(address), payload);
      if (receivers === 0)
        this.options.logger.debug({ id: message.id }, 'no cli client waiting for this message');
    }
  }

  startActivity(_chatId: string, _threadId?: string): void {}

  stopActivity(_chatId: string, _threadId?: string): void {}
}
