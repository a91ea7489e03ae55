/** `magpie doctor`'s Telegram checks: getMe with each bot's token (the default one skipped when unset). */
import type { BotInstance } from '../../config/bot-accounts.js';
import type { Check } from '../../ops/doctor.js';
import { botCheck } from '../../ops/doctor-bots.js';
import { TELEGRAM_API_ROOT } from './api-root.js';

/**
 * The bot's token is accepted (getMe): the default bot (`telegram`, TELEGRAM_BOT_TOKEN)
 * unless `bot` names an account (`telegram-family`, from TELEGRAM_ACCOUNTS).
 */
export function telegramCheck(
  settings: { token: string | undefined; apiRoot: string | undefined },
  bot: Omit<BotInstance, 'token'> & { token: string | undefined } = {
    name: 'telegram',
    token: settings.token,
    source: 'TELEGRAM_BOT_TOKEN',
  },
): Check {
  return botCheck({
    name: bot.name,
    token: bot.token,
    tokenVariable: bot.source,
    root: settings.apiRoot ?? TELEGRAM_API_ROOT,
    rootVariable: 'TELEGRAM_API_ROOT',
    request: (root, token) => ({ url: `${root}/bot${token}/getMe`, headers: {} }),
    botName(res, body) {
      const answer = body as { ok?: boolean; result?: { username?: string } };
      return res.ok && answer.ok ? `@${answer.result?.username ?? '?'}` : undefined;
    },
    refusal: (status) =>
      `getMe answered ${status}: the token is ${status === 401 || status === 404 ? 'invalid' : 'not accepted'}`,
    fix: `put the token from @BotFather in ${bot.source} in .env`,
  });
}
