/**
 * The Slack step of `magpie onboard` (skipped when no bot token is given or
 * typed): the bot token checked with auth.test, the user's member id typed for
 * SLACK_ALLOW_FROM (the generic bot step), then the app-level token Socket
 * Mode needs, checked with apps.connections.open.
 */
import { ConfigError } from '../../errors/index.js';
import { askId, type BotPlatform, botStep } from '../../onboard/bot-steps.js';
import { type BotIdentity, botApiFetch, unavailable } from '../../onboard/checks.js';
import { existingValue, maskSecret, progress, type StepContext } from '../../onboard/context.js';
import { SLACK_API_ROOT } from './api-root.js';
import { withSlash } from './doctor.js';

const SLACK: BotPlatform = {
  name: 'Slack',
  prefix: 'SLACK',
  flag: 'slack',
  defaultRoot: SLACK_API_ROOT,
  tokenQuestion: 'Slack bot token (xoxb-…, OAuth & Permissions)',
  check: slackBot,
  shown: (bot) => bot.username,
  checkId: checkSlackUserId,
  async ownId(_ctx, prompter) {
    prompter.say(
      'Your Slack member id lets the bot answer you (and only you) at once.\n' +
        '  Find it: your profile → ⋮ → Copy member ID (it starts with U).\n',
    );
    return askId(prompter, this);
  },
};

/** The Slack step (skipped when no bot token is given or typed). */
export async function slackStep(ctx: StepContext): Promise<void> {
  await botStep(ctx, SLACK);
  if (ctx.updates['SLACK_BOT_TOKEN'] === undefined && !existingValue(ctx, 'SLACK_BOT_TOKEN')) return;
  const root = withSlash(
    ctx.updates['SLACK_API_ROOT'] ?? existingValue(ctx, 'SLACK_API_ROOT') ?? SLACK_API_ROOT,
  );
  const current = existingValue(ctx, 'SLACK_APP_TOKEN');
  let token = ctx.flags['slack-app-token']?.trim();
  if (token === undefined && ctx.prompter) {
    token = await ctx.prompter.ask(
      'Slack app-level token (xapp-…, Basic Information → App-Level Tokens) (hidden)',
      {
        hidden: true,
        default: current,
        defaultLabel: current ? `Enter keeps ${maskSecret(current)}` : 'Enter to skip',
      },
    );
  }
  if (!token) {
    if (!current) progress(ctx, '  SLACK_APP_TOKEN is empty: the Slack channel stays off until it is set');
    return;
  }
  await slackApp(token, root, ctx.prompter?.signal);
  progress(ctx, '✓ Slack accepts the app token (Socket Mode)');
  ctx.updates['SLACK_APP_TOKEN'] = token;
}

async function call(method: string, token: string, apiRoot: string, signal?: AbortSignal) {
  const res = await botApiFetch({
    service: 'Slack',
    apiRoot,
    url: `${withSlash(apiRoot)}${method}`,
    init: { method: 'POST', headers: { authorization: `Bearer ${token}` } },
    signal,
  });
  const body = (await res.json().catch(() => ({}))) as {
    ok?: boolean;
    error?: string;
    user?: string;
    user_id?: string;
  };
  if (!res.ok && res.status !== 200)
    throw unavailable(`Slack's ${method} answered ${res.status}: try again later`);
  return body;
}

/** The Slack bot the token belongs to (auth.test). */
export async function slackBot(token: string, apiRoot: string, signal?: AbortSignal): Promise<BotIdentity> {
  if (!token.startsWith('xoxb-'))
    throw new ConfigError('a Slack bot token starts with xoxb- (OAuth & Permissions → Bot User OAuth Token)');
  const body = await call('auth.test', token, apiRoot, signal);
  if (body.ok && body.user_id) return { id: body.user_id, username: body.user ?? '?' };
  throw new ConfigError(
    `Slack refused the bot token (auth.test: ${body.error ?? 'not ok'}): copy it again from OAuth & Permissions`,
  );
}

/** The app token opens Socket Mode connections (apps.connections.open). */
export async function slackApp(token: string, apiRoot: string, signal?: AbortSignal): Promise<void> {
  if (!token.startsWith('xapp-'))
    throw new ConfigError('a Slack app-level token starts with xapp- (Basic Information → App-Level Tokens)');
  const body = await call('apps.connections.open', token, apiRoot, signal);
  if (!body.ok)
    throw new ConfigError(
      `Slack refused the app token (apps.connections.open: ${body.error ?? 'not ok'}): give it the connections:write scope and turn Socket Mode on`,
    );
}

/** A Slack allow-list entry as typed: a member id (U… or W…), `@name`, or `*`. */
export function checkSlackUserId(text: string): string {
  const id = text.trim();
  if (/^[UW][A-Z0-9]{6,}$/.test(id) || /^@[a-z0-9._-]{1,80}$/i.test(id) || id === '*') return id;
  throw new ConfigError(
    `"${id}" is not a Slack member id (it starts with U: your profile → ⋮ → Copy member ID)`,
  );
}
