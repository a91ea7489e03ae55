/**
 * The web chat channel (`web`, gateway side): delivers the bot's messages to
 * the chat pages the dashboard serves at `/chat`. Every message is kept in the
 * chat's short buffer and published (bus/web-events.ts), so a page open in
 * any dashboard process shows it at once and a page that was reconnecting
 * reads it when it is back; live snapshots and typing are published only.
 * A message's actions travel with it: the page shows them as buttons, and a
 * click posts the command as if typed (assets/app-script.ts). A spoken reply's
 * OGG/Opus is kept apart (bus/web-audio.ts, capped) and its event carries only
 * its length: the page's `<audio>` player loads it from `GET /chat/audio`.
 * Inbound messages come over HTTP (routes.ts), not through this class.
 */

import { WEB_AUDIO_MAX_BYTES } from '../../bus/web-audio.js';
import type { WebEventBus } from '../../bus/web-events.js';
import { AppError, describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { LiveUpdate } from '../../messages/live-update.js';
import type { OutboundMessage } from '../../messages/messages.js';
import { spokenAudio } from '../../voice/outbound-audio.js';
import type { Channel } from '../types.js';
import { CHAT_ID_PATTERN, isChatId } from './chat-id.js';

/** What the web channel needs. */
export interface WebChannelOptions {
  bus: Pick<WebEventBus, 'pushWebEvent' | 'publishWebSignal' | 'keepWebAudio'>;
  logger: Logger;
}

export class WebChannel implements Channel {
  readonly name = 'web';
  private readonly logger: Logger;

  constructor(private readonly options: WebChannelOptions) {
    this.logger = options.logger.child({ channel: 'web' });
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {}

  /**
   * Keeps and publishes the message for the chat's pages. A chat id no page could have is
   * DELIVERY_PERMANENT, and so is audio that is not OGG/Opus or is over WEB_AUDIO_MAX_BYTES;
   * Redis away is DELIVERY_TRANSIENT (retried).
   */
  async send(message: OutboundMessage): Promise<void> {
    const chat = message.chatId;
    if (!CHAT_ID_PATTERN.test(chat)) {
      throw new AppError('DELIVERY_PERMANENT', `web chat id "${chat.slice(0, 80)}" is not valid`);
    }
    const audio = spokenAudio(message);
    if (audio && audio.bytes.length > WEB_AUDIO_MAX_BYTES) {
      throw new AppError(
        'DELIVERY_PERMANENT',
        `web chat audio of ${message.id} is over ${WEB_AUDIO_MAX_BYTES} bytes`,
      );
    }
    try {
      if (audio) await this.options.bus.keepWebAudio(chat, message.id, audio.bytes);
      await this.options.bus.pushWebEvent(chat, {
        type: 'message',
        id: message.id,
        text: message.content,
        kind: message.kind,
        ...(message.live ? { live: message.live } : {}),
        ...(message.actions?.length ? { actions: message.actions } : {}),
        ...(audio ? { audio: { seconds: Math.round(audio.durationSeconds * 100) / 100 } } : {}),
        at: message.createdAt,
      });
    } catch (err) {
      throw new AppError('DELIVERY_TRANSIENT', `web chat message not kept: ${describeError(err)}`, {
        cause: err,
        transient: true,
      });
    }
  }

  /** Publishes the snapshot to the chat's open pages. Never throws. */
  async preview(update: LiveUpdate): Promise<void> {
    if (!isChatId(update.chatId)) return;
    try {
      await this.options.bus.publishWebSignal(update.chatId, {
        type: 'live',
        turn: update.turn,
        text: update.text,
        ...(update.progress ? { progress: update.progress } : {}),
        seq: update.seq,
      });
    } catch (err) {
      this.logger.debug({ err: describeError(err), turn: update.turn }, 'live snapshot not published');
    }
  }

  startActivity(chatId: string): void {
    this.typing(chatId, true);
  }

  stopActivity(chatId: string): void {
    this.typing(chatId, false);
  }

  private typing(chat: string, active: boolean): void {
    if (!isChatId(chat)) return;
    this.options.bus.publishWebSignal(chat, { type: 'typing', active }).catch((err: unknown) => {
      this.logger.debug({ err: describeError(err), chat }, 'typing not published');
    });
  }
}
