/**
 * The chat-platform steps of `magpie onboard`, both optional: a Telegram bot
 * token checked with getMe, then the user's id captured from a message they
 * send the bot (or typed); a Discord bot token checked with /users/@me, then
 * the user's id typed (Discord shows a DM to a bot only over its gateway).
 * Sets TELEGRAM_BOT_TOKEN / TELEGRAM_ALLOW_FROM (and TELEGRAM_API_ROOT when
 * given) and the DISCORD_ equivalents.
 */
import { ConfigError, describeError } from '../errors/index.js';
import { captureTelegramSender, checkDiscordUserId, checkTelegramUserId } from './capture.js';
import { type BotIdentity, discordBot, telegramBot } from './checks.js';
import { existingValue, maskSecret, mergeIds, progress, type StepContext } from './context.js';
import { checkBaseURL } from './endpoints.js';

/** Telegram's and Discord's public API roots. */
export const TELEGRAM_API_ROOT = 'https://api.telegram.org';
export const DISCORD_API_ROOT = 'https://discord.com/api';

/** The Telegram step (skipped when no token is given or typed). */
export async function telegramStep(ctx: StepContext): Promise<void> {
  const root = apiRoot(ctx, 'telegram-api-root', 'TELEGRAM_API_ROOT', TELEGRAM_API_ROOT);
  const token = await askToken(
    ctx,
    'telegram-token',
    'TELEGRAM_BOT_TOKEN',
    'Telegram bot token from @BotFather',
  );
  if (!token) return;
  const bot = await telegramBot(token.value, root, ctx.prompter?.signal);
  progress(ctx, `✓ Telegram accepts the token: bot @${bot.username}`);
  ctx.updates.TELEGRAM_BOT_TOKEN = token.value;
  if (ctx.flags['telegram-api-root'] !== undefined) ctx.updates.TELEGRAM_API_ROOT = root;
  const current = existingValue(ctx, 'TELEGRAM_ALLOW_FROM');
  const flag = ctx.flags['telegram-allow-from'];
  if (flag !== undefined) {
    ctx.updates.TELEGRAM_ALLOW_FROM = idList(flag, checkTelegramUserId);
    return;
  }
  const prompter = ctx.prompter;
  if (!prompter || (token.kept && current)) return keptAllowList(ctx, 'TELEGRAM_ALLOW_FROM', current);
  const id = (await captureId(ctx, token.value, root, bot)) ?? (await askTelegramId(ctx));
  if (id) ctx.updates.TELEGRAM_ALLOW_FROM = mergeIds(current, [id]);
  else keptAllowList(ctx, 'TELEGRAM_ALLOW_FROM', current);
}

/** The Discord step (skipped when no token is given or typed). */
export async function discordStep(ctx: StepContext): Promise<void> {
  const root = apiRoot(ctx, 'discord-api-root', 'DISCORD_API_ROOT', DISCORD_API_ROOT);
  const token = await askToken(
    ctx,
    'discord-token',
    'DISCORD_BOT_TOKEN',
    'Discord bot token (developer portal → Bot)',
  );
  if (!token) return;
  const bot = await discordBot(token.value, root, ctx.prompter?.signal);
  progress(ctx, `✓ Discord accepts the token: bot ${bot.username}`);
  ctx.updates.DISCORD_BOT_TOKEN = token.value;
  if (ctx.flags['discord-api-root'] !== undefined) ctx.updates.DISCORD_API_ROOT = root;
  const current = existingValue(ctx, 'DISCORD_ALLOW_FROM');
  const flag = ctx.flags['discord-allow-from'];
  if (flag !== undefined) {
    ctx.updates.DISCORD_ALLOW_FROM = idList(flag, checkDiscordUserId);
    return;
  }
  const prompter = ctx.prompter;
  if (!prompter || (token.kept && current)) return keptAllowList(ctx, 'DISCORD_ALLOW_FROM', current);
  prompter.say(
    '  The bot reads messages only with Message Content Intent on (developer portal → Bot → Privileged Gateway Intents).\n' +
      'Your Discord user id lets the bot answer you (and only you) at once.\n' +
      '  Find it: Settings → Advanced → Developer Mode on, then right-click your name → Copy User ID.\n',
  );
  for (;;) {
    const answer = await prompter.ask('Your Discord user id (Enter to skip: others then get a pairing code)');
    if (answer === '') return keptAllowList(ctx, 'DISCORD_ALLOW_FROM', current);
    try {
      ctx.updates.DISCORD_ALLOW_FROM = mergeIds(current, [checkDiscordUserId(answer)]);
      return;
    } catch (err) {
      prompter.say(`  ${describeError(err)}\n`);
    }
  }
}

/** A token from its flag, or asked (hidden; Enter keeps the one in .env, or skips). */
async function askToken(
  ctx: StepContext,
  flag: 'telegram-token' | 'discord-token',
  variable: string,
  question: string,
): Promise<{ value: string; kept: boolean } | undefined> {
  const given = ctx.flags[flag];
  if (given !== undefined) return given.trim() === '' ? undefined : { value: given.trim(), kept: false };
  const prompter = ctx.prompter;
  if (!prompter) return undefined;
  const current = existingValue(ctx, variable);
  const label = current ? `Enter keeps ${maskSecret(current)}` : 'Enter to skip';
  const value = await prompter.ask(`${question} (hidden)`, {
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

async function askTelegramId(ctx: StepContext): Promise<string | undefined> {
  const prompter = ctx.prompter!;
  prompter.say('  Your numeric id: send /start to @userinfobot on Telegram, it answers with it.\n');
  for (;;) {
    const answer = await prompter.ask(
      'Your Telegram user id (Enter to skip: others then get a pairing code)',
    );
    if (answer === '') return undefined;
    try {
      return checkTelegramUserId(answer);
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
  flag: 'telegram-api-root' | 'discord-api-root',
  variable: string,
  fallback: string,
): string {
  const text = ctx.flags[flag] ?? existingValue(ctx, variable) ?? fallback;
  const checked = checkBaseURL(text);
  if (!checked.ok) throw new ConfigError(`--${flag}: ${checked.reason}`);
  return checked.url;
}
