/** `magpie doctor`'s Discord checks: GET /users/@me with each bot's token (the default one skipped when unset). */
import type { BotInstance } from '../../config/bot-accounts.js';
import type { Check } from '../../ops/doctor.js';
import { botCheck } from '../../ops/doctor-bots.js';
import { DISCORD_API_ROOT } from './api-root.js';

/**
 * The bot's token is accepted (GET /users/@me): the default bot (`discord`, DISCORD_BOT_TOKEN)
 * unless `bot` names an account (`discord-work`, from DISCORD_ACCOUNTS).
 */
export function discordCheck(
  settings: { token: string | undefined; apiRoot: string | undefined },
  bot: Omit<BotInstance, 'token'> & { token: string | undefined } = {
    name: 'discord',
    token: settings.token,
    source: 'DISCORD_BOT_TOKEN',
  },
): Check {
  return botCheck({
    name: bot.name,
    token: bot.token,
    tokenVariable: bot.source,
    root: settings.apiRoot ?? DISCORD_API_ROOT,
    rootVariable: 'DISCORD_API_ROOT',
    request: (root, token) => ({ url: `${root}/v10/users/@me`, headers: { authorization: `Bot ${token}` } }),
    botName: (res, body) => (res.ok ? ((body as { username?: string }).username ?? '?') : undefined),
    refusal: (status) =>
      `GET /users/@me answered ${status}: the token is ${status === 401 ? 'invalid' : 'not accepted'}`,
    fix: `put the bot token from the Discord developer portal in ${bot.source} in .env`,
  });
}
