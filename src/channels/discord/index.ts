/** The Discord channel adapter (discord.js 14). */
import type { ChannelFactory } from '../types.js';
import { DiscordChannel } from './channel.js';

export type { DiscordChannelOptions } from './channel.js';
export { DiscordChannel } from './channel.js';

/** Builds the Discord channel from the composition root's deps (needs DISCORD_BOT_TOKEN). */
export const createDiscordChannel: ChannelFactory = (deps) => new DiscordChannel(deps);
