/** The Discord channel adapter (not built yet). */
import { AppError } from '../../errors/index.js';
import type { Channel, ChannelDeps } from '../types.js';

export function createDiscordChannel(_deps: ChannelDeps): Channel {
  throw new AppError('INTERNAL', 'the discord channel is not built yet');
}
