/**
 * The generic bot step of `magpie onboard`, run by each token-and-allow-list
 * channel's own step over a description of its platform (the channel's
 * `onboard.ts`): the bot token (flag, or a hidden
 * question) checked live, then the user's own id for the allow list, captured
 * or typed as the platform allows. Sets `<PREFIX>_BOT_TOKEN` /
 * `<PREFIX>_ALLOW_FROM` (and `<PREFIX>_API_ROOT` when given).
 */
import { ConfigError, describeError } from '../errors/index.js';
import type { BotIdentity } from './checks.js';
import { existingValue, maskSecret, mergeIds, progress, type StepContext } from './context.js';
import { checkBaseURL } from './endpoints.js';
import type { Prompter } from './prompts.js';

/** What differs between the platforms. */
export interface BotPlatform {
  name: string;
  /** Variable prefix: `SLACK` → SLACK_BOT_TOKEN, SLACK_ALLOW_FROM, SLACK_API_ROOT. */
  prefix: string;
  /** Flag prefix: `slack` → --slack-token, --slack-allow-from, --slack-api-root. */
  flag: string;
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

/** The step for one platform (skipped when no token is given or typed). */
export async function botStep(ctx: StepContext, platform: BotPlatform): Promise<void> {
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
  platform: BotPlatform,
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

/** Asks for the user's id until it is a valid one or skipped (Enter). */
export async function askId(prompter: Prompter, platform: BotPlatform): Promise<string | undefined> {
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

function apiRoot(ctx: StepContext, flag: `${string}-api-root`, variable: string, fallback: string): string {
  const given = ctx.flags[flag];
  const checked = checkBaseURL(given ?? existingValue(ctx, variable) ?? fallback);
  if (!checked.ok)
    throw new ConfigError(`${given === undefined ? `${variable} in .env` : `--${flag}`}: ${checked.reason}`);
  return checked.url;
}
