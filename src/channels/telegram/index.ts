/** The Telegram channel adapter (telegraf); the gateway builds it through its descriptor (`descriptor.ts`). */
export { TelegramChannel, type TelegramChannelOptions } from './channel.js';
