/** `magpie doctor`'s Discord check: GET /users/@me with DISCORD_BOT_TOKEN (skipped without one). */
import type { Check } from '../../ops/doctor.js';
import { botCheck } from '../../ops/doctor-bots.js';
import { DISCORD_API_ROOT } from './api-root.js';

/** The Discord bot token is accepted (GET /users/@me). */
export function discordCheck(settings: { token: string | undefined; apiRoot: string | undefined }): Check {
  return botCheck({
    name: 'discord',
    token: settings.token,
    tokenVariable: 'DISCORD_BOT_TOKEN',
    root: settings.apiRoot ?? DISCORD_API_ROOT,
    rootVariable: 'DISCORD_API_ROOT',
    request: (root, token) => ({ url: `${root}/v10/users/@me`, headers: { authorization: `Bot ${token}` } }),
    botName: (res, body) => (res.ok ? ((body as { username?: string }).username ?? '?') : undefined),
    refusal: (status) =>
      `GET /users/@me answered ${status}: the token is ${status === 401 ? 'invalid' : 'not accepted'}`,
    fix: 'put the bot token from the Discord developer portal in DISCORD_BOT_TOKEN in .env',
  });
}
