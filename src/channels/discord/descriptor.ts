/**
 * The Discord channel as the registry sees it: DISCORD_BOT_TOKEN (on when
 * set), DISCORD_ACCOUNTS (more bots, `name=token` pairs: each the channel
 * instance `discord-<name>`, its own gateway connection), DISCORD_API_ROOT,
 * DISCORD_ALLOW_FROM and DISCORD_STREAM, which every bot shares; /users/@me
 * per bot for doctor; the token and the typed user id for onboard. Light:
 * discord.js is loaded by `create` only.
 */
import { botAccountsValue, botInstances, namedBots } from '../../config/bot-accounts.js';
import { list, optionalSwitch, optionalText, optionalUrl } from '../../config/env-values.js';
import { urlCredentials } from '../../config/url-credentials.js';
import { defineChannel, lazyCheck, type SettingsOf } from '../descriptor.js';

/** Where the channel's bots' tokens are set. */
const VARIABLES = { token: 'DISCORD_BOT_TOKEN', accounts: 'DISCORD_ACCOUNTS' };

export const discordChannel = defineChannel({
  name: 'discord',
  playsAudio: true,
  env: {
    DISCORD_STREAM: optionalSwitch,
    DISCORD_BOT_TOKEN: optionalText,
    DISCORD_ACCOUNTS: botAccountsValue,
    DISCORD_API_ROOT: optionalUrl(),
    DISCORD_ALLOW_FROM: list,
  },
  settings: (e) => ({
    token: e.DISCORD_BOT_TOKEN,
    accounts: e.DISCORD_ACCOUNTS,
    apiRoot: e.DISCORD_API_ROOT,
    allowFrom: e.DISCORD_ALLOW_FROM,
  }),
  stream: 'DISCORD_STREAM',
  secretVariables: ['DISCORD_BOT_TOKEN', 'DISCORD_ACCOUNTS'],
  secrets: (s) => [s.token, ...s.accounts.map((a) => a.token), ...urlCredentials(s.apiRoot)],
  enabled: (s) => s.token !== undefined || s.accounts.length > 0,
  async create(deps, s) {
    const { DiscordChannel } = await import('./channel.js');
    return botInstances('discord', s, VARIABLES).map((bot) => new DiscordChannel(deps, { bot }));
  },
  // The default bot's check (skipped without its token), then one per account.
  doctor: (s) =>
    namedBots('discord', s, VARIABLES).map((bot) =>
      lazyCheck(bot.name, async () => (await import('./doctor.js')).discordCheck(s, bot)),
    ),
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
