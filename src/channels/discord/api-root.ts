/** Discord's public REST API root. */
export const DISCORD_API_ROOT = 'https://discord.com/api';
