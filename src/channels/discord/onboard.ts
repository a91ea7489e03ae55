/**
 * The Discord step of `magpie onboard` (skipped when no token is given or
 * typed): the token checked with GET /users/@me, then the user's own id for
 * DISCORD_ALLOW_FROM, typed (a DM reaches a bot only over the gateway, so
 * there is no REST call to capture it).
 */
import { ConfigError } from '../../errors/index.js';
import { askId, type BotPlatform, botStep } from '../../onboard/bot-steps.js';
import { type BotIdentity, botApiFetch, unavailable } from '../../onboard/checks.js';
import type { StepContext } from '../../onboard/context.js';
import { DISCORD_API_ROOT } from './api-root.js';

const DISCORD: BotPlatform = {
  name: 'Discord',
  prefix: 'DISCORD',
  flag: 'discord',
  defaultRoot: DISCORD_API_ROOT,
  tokenQuestion: 'Discord bot token (developer portal → Bot)',
  check: discordBot,
  shown: (bot) => bot.username,
  checkId: checkDiscordUserId,
  async ownId(_ctx, prompter) {
    prompter.say(
      '  The bot reads messages only with Message Content Intent on (developer portal → Bot → Privileged Gateway Intents).\n' +
        'Your Discord user id lets the bot answer you (and only you) at once.\n' +
        '  Find it: Settings → Advanced → Developer Mode on, then right-click your name → Copy User ID.\n',
    );
    return askId(prompter, this);
  },
};

/** The Discord step (skipped when no token is given or typed). */
export function discordStep(ctx: StepContext): Promise<void> {
  return botStep(ctx, DISCORD);
}

/** The Discord bot the token belongs to (GET /users/@me). */
export async function discordBot(token: string, apiRoot: string, signal?: AbortSignal): Promise<BotIdentity> {
  if (!/^[A-Za-z0-9._-]{1,200}$/.test(token)) {
    throw new ConfigError(
      'the Discord token does not look like a bot token (letters, digits, . _ and - only)',
    );
  }
  const res = await botApiFetch({
    service: 'Discord',
    apiRoot,
    url: `${apiRoot}/v10/users/@me`,
    init: { headers: { authorization: `Bot ${token}` } },
    signal,
  });
  const body = (await res.json().catch(() => ({}))) as { id?: string; username?: string; bot?: boolean };
  if (res.ok && body.id) return { id: body.id, username: body.username ?? '?' };
  if (res.status === 401 || res.status === 403) {
    throw new ConfigError(
      `Discord refused the bot token (GET /users/@me answered ${res.status}): copy it again from the developer portal (Bot → Reset Token)`,
    );
  }
  throw unavailable(`Discord's GET /users/@me answered ${res.status}: try again later`);
}

/**
 * A Discord allow-list entry as typed: a user id (a snowflake of 17 to 20
 * digits), `@username`, or `*` (everyone). Returns it, or throws a
 * ConfigError saying where to find the id.
 */
export function checkDiscordUserId(text: string): string {
  const id = text.trim();
  if (/^\d{17,20}$/.test(id) || /^@[a-z0-9_.]{2,32}$/.test(id) || id === '*') return id;
  throw new ConfigError(
    `"${id}" is not a Discord user id (17 to 20 digits: Settings → Advanced → Developer Mode, then right-click your name → Copy User ID)`,
  );
}
