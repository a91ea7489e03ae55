/**
 * The Discord channel as the registry sees it: DISCORD_BOT_TOKEN (on when
 * set), DISCORD_API_ROOT, DISCORD_ALLOW_FROM and DISCORD_STREAM; /users/@me
 * for doctor; the token and the typed user id for onboard. Light: discord.js
 * is loaded by `create` only.
 */
import { list, optionalSwitch, optionalText, optionalUrl } from '../../config/env-values.js';
import { urlCredentials } from '../../config/url-credentials.js';
import { defineChannel, lazyCheck, type SettingsOf } from '../descriptor.js';

export const discordChannel = defineChannel({
  name: 'discord',
  env: {
    DISCORD_STREAM: optionalSwitch,
    DISCORD_BOT_TOKEN: optionalText,
    DISCORD_API_ROOT: optionalUrl(),
    DISCORD_ALLOW_FROM: list,
  },
  settings: (e) => ({
    token: e.DISCORD_BOT_TOKEN,
    apiRoot: e.DISCORD_API_ROOT,
    allowFrom: e.DISCORD_ALLOW_FROM,
  }),
  stream: 'DISCORD_STREAM',
  secretVariables: ['DISCORD_BOT_TOKEN'],
  secrets: (s) => [s.token, ...urlCredentials(s.apiRoot)],
  enabled: (s) => s.token !== undefined,
  async create(deps) {
    const { DiscordChannel } = await import('./channel.js');
    return new DiscordChannel(deps);
  },
  doctor: (s) => lazyCheck('discord', async () => (await import('./doctor.js')).discordCheck(s)),
  onboard: {
    flags: ['discord-token', 'discord-allow-from', 'discord-api-root'],
    summary: 'a Discord bot',
    help: [
      '--discord-token TOKEN       a Discord bot token',
      '--discord-allow-from IDS    Discord user ids allowed to talk to it (comma-separated)',
    ],
    run: async (ctx) => (await import('./onboard.js')).discordStep(ctx),
  },
});

declare module '../../config/channel-slices.js' {
  interface ChannelSettingsMap {
    readonly discord: SettingsOf<typeof discordChannel>;
  }
}
