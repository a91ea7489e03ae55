/** The Discord channel adapter (discord.js 14); the gateway builds it through its descriptor (`descriptor.ts`). */
export type { DiscordChannelOptions } from './channel.js';
export { DiscordChannel } from './channel.js';
