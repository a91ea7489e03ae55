/** The Telegram channel adapter: `createTelegramChannel(deps)` for the composition root. */
import type { ChannelDeps, ChannelFactory } from '../types.js';
import { TelegramChannel } from './channel.js';

/** Builds the Telegram channel from the shared deps (token, API root, allow-list from config). */
export const createTelegramChannel: ChannelFactory = (deps: ChannelDeps) => new TelegramChannel(deps);

export { TelegramChannel, type TelegramChannelOptions } from './channel.js';
