/** `magpie doctor`'s Telegram check: getMe with TELEGRAM_BOT_TOKEN (skipped without one). */
import type { Check } from '../../ops/doctor.js';
import { botCheck } from '../../ops/doctor-bots.js';
import { TELEGRAM_API_ROOT } from './api-root.js';

/** The Telegram bot token is accepted (getMe). */
export function telegramCheck(settings: { token: string | undefined; apiRoot: string | undefined }): Check {
  return botCheck({
    name: 'telegram',
    token: settings.token,
    tokenVariable: 'TELEGRAM_BOT_TOKEN',
    root: settings.apiRoot ?? TELEGRAM_API_ROOT,
    rootVariable: 'TELEGRAM_API_ROOT',
    request: (root, token) => ({ url: `${root}/bot${token}/getMe`, headers: {} }),
    botName(res, body) {
      const answer = body as { ok?: boolean; result?: { username?: string } };
      return res.ok && answer.ok ? `@${answer.result?.username ?? '?'}` : undefined;
    },
    refusal: (status) =>
      `getMe answered ${status}: the token is ${status === 401 || status === 404 ? 'invalid' : 'not accepted'}`,
    fix: 'put the token from @BotFather in TELEGRAM_BOT_TOKEN in .env',
  });
}
