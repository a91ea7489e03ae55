/**
 * `magpie doctor`'s checks of the chat platforms: Telegram's getMe and
 * Discord's /users/@me with the configured bot tokens (skipped when a
 * channel has no token). The request URL or its error text can carry the
 * token, so neither is ever printed.
 */
import type { Config } from '../config/index.js';
import { type Check, type CheckResult, failed, pass, skipped } from './doctor.js';

/** The Telegram bot token is accepted (getMe). */
export function telegramCheck(config: Config): Check {
  return {
    name: 'telegram',
    async run(signal) {
      const token = config.telegram.token;
      if (!token) return skipped('TELEGRAM_BOT_TOKEN not set (channel off)');
      const root = config.telegram.apiRoot ?? 'https://api.telegram.org';
      const res = await reach(`${root}/bot${token}/getMe`, {}, signal);
      if (!res) return unreachable(root, 'TELEGRAM_API_ROOT');
      const body = (await res.json().catch(() => ({}))) as { ok?: boolean; result?: { username?: string } };
      if (res.ok && body.ok) return pass(`bot @${body.result?.username ?? '?'}`);
      return failed(
        `getMe answered ${res.status}: the token is ${res.status === 401 || res.status === 404 ? 'invalid' : 'not accepted'}`,
        'put the token from @BotFather in TELEGRAM_BOT_TOKEN in .env',
      );
    },
  };
}

/** The Discord bot token is accepted (GET /users/@me). */
export function discordCheck(config: Config): Check {
  return {
    name: 'discord',
    async run(signal) {
      const token = config.discord.token;
      if (!token) return skipped('DISCORD_BOT_TOKEN not set (channel off)');
      const root = config.discord.apiRoot ?? 'https://discord.com/api';
      const res = await reach(`${root}/v10/users/@me`, { authorization: `Bot ${token}` }, signal);
      if (!res) return unreachable(root, 'DISCORD_API_ROOT');
      const body = (await res.json().catch(() => ({}))) as { username?: string };
      if (res.ok) return pass(`bot ${body.username ?? '?'}`);
      return failed(
        `GET /users/@me answered ${res.status}: the token is ${res.status === 401 ? 'invalid' : 'not accepted'}`,
        'put the bot token from the Discord developer portal in DISCORD_BOT_TOKEN in .env',
      );
    },
  };
}

/** GETs `url`; undefined when it cannot be reached (the error text could carry the token, so it is dropped). */
async function reach(
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<Response | undefined> {
  try {
    return await fetch(url, { headers, signal });
  } catch (_err) {
    return undefined; // reported as unreachable by the caller
  }
}

function unreachable(root: string, variable: string): CheckResult {
  return failed(`cannot reach ${root}`, `check the network (or ${variable} in .env, when set)`);
}
