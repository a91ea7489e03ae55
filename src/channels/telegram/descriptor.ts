/**
 * The Telegram channel as the registry sees it: TELEGRAM_BOT_TOKEN (on when
 * set), TELEGRAM_API_ROOT, TELEGRAM_ALLOW_FROM and TELEGRAM_STREAM; getMe for
 * doctor; the token and the id capture for onboard. Light: telegraf is loaded
 * by `create` only.
 */
import { list, optionalSwitch, optionalText, optionalUrl } from '../../config/env-values.js';
import { urlCredentials } from '../../config/url-credentials.js';
import { defineChannel, lazyCheck, type SettingsOf } from '../descriptor.js';

export const telegramChannel = defineChannel({
  name: 'telegram',
  env: {
    TELEGRAM_STREAM: optionalSwitch,
    TELEGRAM_BOT_TOKEN: optionalText,
    TELEGRAM_API_ROOT: optionalUrl(),
    TELEGRAM_ALLOW_FROM: list,
  },
  settings: (e) => ({
    token: e.TELEGRAM_BOT_TOKEN,
    apiRoot: e.TELEGRAM_API_ROOT,
    allowFrom: e.TELEGRAM_ALLOW_FROM,
  }),
  stream: 'TELEGRAM_STREAM',
  secretVariables: ['TELEGRAM_BOT_TOKEN'],
  secrets: (s) => [s.token, ...urlCredentials(s.apiRoot)],
  enabled: (s) => s.token !== undefined,
  async create(deps) {
    const { TelegramChannel } = await import('./channel.js');
    return new TelegramChannel(deps);
  },
  doctor: (s) => lazyCheck('telegram', async () => (await import('./doctor.js')).telegramCheck(s)),
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
