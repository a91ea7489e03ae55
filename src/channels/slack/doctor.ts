/**
 * `magpie doctor`'s Slack check: the bot token with `auth.test`, then the app
 * token with `apps.connections.open` (what Socket Mode needs); skipped
 * without a bot token. Neither token nor a URL is ever printed.
 */
import type { Check } from '../../ops/doctor.js';
import { type CheckResult, failed } from '../../ops/doctor.js';
import { botCheck } from '../../ops/doctor-bots.js';
import { SLACK_API_ROOT } from './api-root.js';

interface SlackAnswer {
  ok?: boolean;
  user?: string;
  error?: string;
}

/** Both Slack tokens are accepted. */
export function slackCheck(settings: {
  token: string | undefined;
  appToken: string | undefined;
  apiRoot: string | undefined;
}): Check {
  const root = withSlash(settings.apiRoot ?? SLACK_API_ROOT);
  const common = { root, rootVariable: 'SLACK_API_ROOT' };
  const bot = botCheck({
    ...common,
    name: 'slack',
    token: settings.token,
    tokenVariable: 'SLACK_BOT_TOKEN',
    request: (r, token) => ({ url: `${r}auth.test`, headers: { authorization: `Bearer ${token}` } }),
    botName: (res, body) =>
      res.ok && (body as SlackAnswer).ok ? `@${(body as SlackAnswer).user ?? '?'}` : undefined,
    refusal: (status) => `auth.test answered ${status}: the bot token is not accepted`,
    fix: 'put the Bot User OAuth Token (xoxb-…, OAuth & Permissions) in SLACK_BOT_TOKEN in .env',
  });
  const app = botCheck({
    ...common,
    name: 'slack',
    token: settings.appToken,
    tokenVariable: 'SLACK_APP_TOKEN',
    request: (r, token) => ({
      url: `${r}apps.connections.open`,
      headers: { authorization: `Bearer ${token}` },
    }),
    botName: (res, body) => (res.ok && (body as SlackAnswer).ok ? 'Socket Mode' : undefined),
    refusal: (status) => `apps.connections.open answered ${status}: the app token is not accepted`,
    fix: 'put an app-level token with connections:write (xapp-…, Basic Information → App-Level Tokens) in SLACK_APP_TOKEN in .env, and turn Socket Mode on',
  });
  return {
    name: 'slack',
    async run(signal) {
      const first = one(await bot.run(signal));
      if (first.status !== 'ok') return first;
      if (!settings.appToken)
        return failed('SLACK_APP_TOKEN not set', 'Socket Mode needs an app-level token (xapp-…) in .env');
      const second = one(await app.run(signal));
      if (second.status !== 'ok') return second;
      return { ...first, detail: `${first.detail}, Socket Mode token accepted` };
    },
  };
}

/** botCheck answers with one result. */
function one(result: CheckResult | CheckResult[]): CheckResult {
  return Array.isArray(result) ? result[0]! : result;
}

/** The API root with its trailing slash (methods are appended to it). */
export function withSlash(root: string): string {
  return root.endsWith('/') ? root : `${root}/`;
}
