/**
 * The Telegram channel as the registry sees it: TELEGRAM_BOT_TOKEN (on when
 * set), TELEGRAM_ACCOUNTS (more bots, `name=token` pairs: each the channel
 * instance `telegram-<name>`), TELEGRAM_API_ROOT, TELEGRAM_ALLOW_FROM and
 * TELEGRAM_STREAM, which every bot shares; getMe per bot for doctor; the
 * token and the id capture for onboard. Light: telegraf is loaded by `create` only.
 */
import { botAccountsValue, botInstances, namedBots } from '../../config/bot-accounts.js';
import { list, optionalSwitch, optionalText, optionalUrl } from '../../config/env-values.js';
import { urlCredentials } from '../../config/url-credentials.js';
import { defineChannel, lazyCheck, type SettingsOf } from '../descriptor.js';

/** Where the channel's bots' tokens are set. */
const VARIABLES = { token: 'TELEGRAM_BOT_TOKEN', accounts: 'TELEGRAM_ACCOUNTS' };

export const telegramChannel = defineChannel({
  name: 'telegram',
  playsAudio: true,
  env: {
    TELEGRAM_STREAM: optionalSwitch,
    TELEGRAM_BOT_TOKEN: optionalText,
    TELEGRAM_ACCOUNTS: botAccountsValue,
    TELEGRAM_API_ROOT: optionalUrl(),
    TELEGRAM_ALLOW_FROM: list,
  },
  settings: (e) => ({
    token: e.TELEGRAM_BOT_TOKEN,
    accounts: e.TELEGRAM_ACCOUNTS,
    apiRoot: e.TELEGRAM_API_ROOT,
    allowFrom: e.TELEGRAM_ALLOW_FROM,
  }),
  stream: 'TELEGRAM_STREAM',
  secretVariables: ['TELEGRAM_BOT_TOKEN', 'TELEGRAM_ACCOUNTS'],
  secrets: (s) => [s.token, ...s.accounts.map((a) => a.token), ...urlCredentials(s.apiRoot)],
  enabled: (s) => s.token !== undefined || s.accounts.length > 0,
  async create(deps, s) {
    const { TelegramChannel } = await import('./channel.js');
    return botInstances('telegram', s, VARIABLES).map((bot) => new TelegramChannel(deps, { bot }));
  },
  // The default bot's check (skipped without its token), then one per account.
  doctor: (s) =>
    namedBots('telegram', s, VARIABLES).map((bot) =>
      lazyCheck(bot.name, async () => (await import('./doctor.js')).telegramCheck(s, bot)),
    ),
  onboard: {
    flags: ['telegram-token', 'telegram-allow-from', 'telegram-api-root'],
    summary:
      'a Telegram bot (the token is checked, then you send the bot a message and your id goes into TELEGRAM_ALLOW_FROM)',
    help: [
      '--telegram-token TOKEN      a Telegram bot token from @BotFather',
      '--telegram-allow-from IDS   Telegram user ids allowed to talk to it (comma-separated)',
    ],
    run: async (ctx) => (await import('./onboard.js')).telegramStep(ctx),
  },
});

declare module '../../config/channel-slices.js' {
  interface ChannelSettingsMap {
    readonly telegram: SettingsOf<typeof telegramChannel>;
  }
}
