/**
 * The Telegram step of `magpie onboard` (skipped when no token is given or
 * typed): the token checked with getMe, then the user's own id for
 * TELEGRAM_ALLOW_FROM, captured from a message they send the bot (or typed).
 */
import { ConfigError, describeError } from '../../errors/index.js';
import { askId, type BotPlatform, botStep } from '../../onboard/bot-steps.js';
import { type BotIdentity, botApiFetch, unavailable } from '../../onboard/checks.js';
import { progress, type StepContext } from '../../onboard/context.js';
import { TELEGRAM_API_ROOT } from './api-root.js';
import { captureTelegramSender } from './capture.js';

const TELEGRAM: BotPlatform = {
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

/** The Telegram step (skipped when no token is given or typed). */
export function telegramStep(ctx: StepContext): Promise<void> {
  return botStep(ctx, TELEGRAM);
}

/** Telegram's token shape: the bot's numeric id, a colon, then letters, digits, _ and -. */
const TELEGRAM_TOKEN = /^\d{1,20}:[A-Za-z0-9_-]{1,200}$/;

/** The Telegram bot the token belongs to (getMe). */
export async function telegramBot(
  token: string,
  apiRoot: string,
  signal?: AbortSignal,
): Promise<BotIdentity> {
  // The token becomes part of the request path: anything but its usual shape is refused before use.
  if (!TELEGRAM_TOKEN.test(token)) {
    throw new ConfigError('the Telegram token does not look like one from @BotFather (123456789:AA…)');
  }
  const res = await botApiFetch({
    service: 'Telegram',
    apiRoot,
    url: `${apiRoot}/bot${token}/getMe`,
    signal,
  });
  const body = (await res.json().catch(() => ({}))) as {
    ok?: boolean;
    result?: { id?: number; username?: string };
  };
  if (res.ok && body.ok && body.result?.id !== undefined) {
    return { id: String(body.result.id), username: body.result.username ?? '?' };
  }
  if (res.status === 401 || res.status === 404) {
    throw new ConfigError(
      `Telegram refused the bot token (getMe answered ${res.status}): copy it again from @BotFather`,
    );
  }
  throw unavailable(`Telegram's getMe answered ${res.status}: try again later`);
}

/**
 * A Telegram allow-list entry as typed: a positive whole number (a person's
 * id), `@username`, or `*` (everyone). Returns it, or throws a ConfigError.
 */
export function checkTelegramUserId(text: string): string {
  const id = text.trim();
  if (/^\d{1,15}$/.test(id) || /^@[A-Za-z0-9_]{5,32}$/.test(id) || id === '*') return id;
  throw new ConfigError(`"${id}" is not a Telegram user id (digits, e.g. 123456789), @username or *`);
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
