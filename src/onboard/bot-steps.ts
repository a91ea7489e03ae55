/**
 * The chat-platform steps of `magpie onboard`, both optional and run by one
 * function over a description of each platform: the bot token (flag, or a
 * hidden question) checked live, then the user's own id for the allow list:
 * on Telegram captured from a message they send the bot (or typed), on
 * Discord typed (Discord shows a DM to a bot only over its gateway). Sets
 * TELEGRAM_BOT_TOKEN / TELEGRAM_ALLOW_FROM (and TELEGRAM_API_ROOT when given)
 * and the DISCORD_ equivalents.
 */
import { ConfigError, describeError } from '../errors/index.js';
import { captureTelegramSender, checkDiscordUserId, checkTelegramUserId } from './capture.js';
import { type BotIdentity, discordBot, telegramBot } from './checks.js';
import {
  existingValue,
  maskSecret,
  mergeIds,
  type OnboardFlags,
  progress,
  type StepContext,
} from './context.js';
import { checkBaseURL } from './endpoints.js';
import type { Prompter } from './prompts.js';

/** Telegram's and Discord's public API roots. */
export const TELEGRAM_API_ROOT = 'https://api.telegram.org';
export const DISCORD_API_ROOT = 'https://discord.com/api';

/** What differs between the platforms. */
interface Platform {
  name: string;
  /** Variable prefix: `TELEGRAM` → TELEGRAM_BOT_TOKEN, TELEGRAM_ALLOW_FROM, TELEGRAM_API_ROOT. */
  prefix: 'TELEGRAM' | 'DISCORD';
  /** Flag prefix: `telegram` → --telegram-token, --telegram-allow-from, --telegram-api-root. */
  flag: 'telegram' | 'discord';
  defaultRoot: string;
  tokenQuestion: string;
  check(token: string, root: string, signal?: AbortSignal): Promise<BotIdentity>;
  /** How the bot is named in messages. */
  shown(bot: BotIdentity): string;
  /** Checks one typed id; throws a ConfigError saying what an id looks like. */
  checkId(text: string): string;
  /** The user's own id, asked or captured; undefined when they skip. */
  ownId(
    ctx: StepContext,
    prompter: Prompter,
    token: string,
    root: string,
    bot: BotIdentity,
  ): Promise<string | undefined>;
}

const TELEGRAM: Platform = {
  name: 'Telegram',
  prefix: 'TELEGRAM',
  flag: 'telegram',
  defaultRoot: TELEGRAM_API_ROOT,
  tokenQuestion: 'Telegram bot token from @BotFather',
  check: telegramBot,
  shown: (bot) => `@${bot.username}`,
  checkId: checkTelegramUserId,
  async ownId(ctx, prompter, token, root, bot) {
    const captured = await captureId(ctx, token, root, bot);
    if (captured) return captured;
    prompter.say('  Your numeric id: send /start to @userinfobot on Telegram, it answers with it.\n');
    return askId(prompter, this);
  },
};

const DISCORD: Platform = {
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

/** The Telegram step (skipped when no token is given or typed). */
export function telegramStep(ctx: StepContext): Promise<void> {
  return botStep(ctx, TELEGRAM);
}

/** The Discord step (skipped when no token is given or typed). */
export function discordStep(ctx: StepContext): Promise<void> {
  return botStep(ctx, DISCORD);
}

async function botStep(ctx: StepContext, platform: Platform): Promise<void> {
  const rootFlag = `${platform.flag}-api-root` as const;
  const root = apiRoot(ctx, rootFlag, `${platform.prefix}_API_ROOT`, platform.defaultRoot);
  const token = await askToken(ctx, platform);
  if (!token) return;
  const bot = await platform.check(token.value, root, ctx.prompter?.signal);
  progress(ctx, `✓ ${platform.name} accepts the token: bot ${platform.shown(bot)}`);
  ctx.updates[`${platform.prefix}_BOT_TOKEN`] = token.value;
  if (ctx.flags[rootFlag] !== undefined) ctx.updates[`${platform.prefix}_API_ROOT`] = root;
  const allowVar = `${platform.prefix}_ALLOW_FROM`;
  const current = existingValue(ctx, allowVar);
  const flag = ctx.flags[`${platform.flag}-allow-from`];
  if (flag !== undefined) {
    ctx.updates[allowVar] = idList(flag, platform.checkId);
    return;
  }
  const prompter = ctx.prompter;
  // A kept token with an allow list already set: nothing to ask.
  if (!prompter || (token.kept && current)) return keptAllowList(ctx, allowVar, current);
  const id = await platform.ownId(ctx, prompter, token.value, root, bot);
  if (id) ctx.updates[allowVar] = mergeIds(current, [id]);
  else keptAllowList(ctx, allowVar, current);
}

/** A token from its flag, or asked (hidden; Enter keeps the one in .env, or skips). */
async function askToken(
  ctx: StepContext,
  platform: Platform,
): Promise<{ value: string; kept: boolean } | undefined> {
  const given = ctx.flags[`${platform.flag}-token`];
  if (given !== undefined) return given.trim() === '' ? undefined : { value: given.trim(), kept: false };
  const prompter = ctx.prompter;
  if (!prompter) return undefined;
  const current = existingValue(ctx, `${platform.prefix}_BOT_TOKEN`);
  const label = current ? `Enter keeps ${maskSecret(current)}` : 'Enter to skip';
  const value = await prompter.ask(`${platform.tokenQuestion} (hidden)`, {
    hidden: true,
    default: current,
    defaultLabel: label,
  });
  return value === '' ? undefined : { value, kept: value === current };
}

/** Waits for the user's message to the bot; undefined when none came or the wait failed. */
async function captureId(
  ctx: StepContext,
  token: string,
  root: string,
  bot: BotIdentity,
): Promise<string | undefined> {
  const seconds = Math.round(ctx.captureTimeoutMs / 1000);
  progress(
    ctx,
    `Now send any message to @${bot.username} from your own Telegram account (waiting ${seconds} s)…`,
  );
  try {
    const sender = await captureTelegramSender({
      token,
      apiRoot: root,
      timeoutMs: ctx.captureTimeoutMs,
      ...(ctx.prompter ? { signal: ctx.prompter.signal } : {}),
    });
    if (sender) {
      progress(ctx, `✓ message from ${sender.name}: TELEGRAM_ALLOW_FROM gets id ${sender.id}`);
      return sender.id;
    }
    progress(ctx, `  no message came within ${seconds} s`);
  } catch (err) {
    if (ctx.prompter?.signal.aborted) throw err;
    progress(ctx, `  could not read the bot's messages: ${describeError(err)}`);
  }
  return undefined;
}

/** Asks for the user's id until it is a valid one or skipped (Enter). */
async function askId(prompter: Prompter, platform: Platform): Promise<string | undefined> {
  for (;;) {
    const answer = await prompter.ask(
      `Your ${platform.name} user id (Enter to skip: others then get a pairing code)`,
    );
    if (answer === '') return undefined;
    try {
      return platform.checkId(answer);
    } catch (err) {
      prompter.say(`  ${describeError(err)}\n`);
    }
  }
}

function keptAllowList(ctx: StepContext, variable: string, current: string | undefined): void {
  progress(
    ctx,
    current
      ? `  ${variable} stays ${current}`
      : `  ${variable} is empty: whoever writes to the bot gets a pairing code (approve with "magpie pairing approve <code>")`,
  );
}

/** A comma-separated list of ids from a flag, each checked. */
function idList(text: string, check: (id: string) => string): string {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map(check)
    .join(',');
}

function apiRoot(
  ctx: StepContext,
  flag: keyof OnboardFlags & `${string}-api-root`,
  variable: string,
  fallback: string,
): string {
  const given = ctx.flags[flag];
  const checked = checkBaseURL(given ?? existingValue(ctx, variable) ?? fallback);
  if (!checked.ok)
    throw new ConfigError(`${given === undefined ? `${variable} in .env` : `--${flag}`}: ${checked.reason}`);
  return checked.url;
}
