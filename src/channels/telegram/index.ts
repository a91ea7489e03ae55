/** The Telegram channel adapter (not built yet). */
import { AppError } from '../../errors/index.js';
import type { Channel, ChannelDeps } from '../types.js';

export function createTelegramChannel(_deps: ChannelDeps): Channel {
  throw new AppError('INTERNAL', 'the telegram channel is not built yet');
}
