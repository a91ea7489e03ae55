/**
 * The Matrix step of `magpie onboard` (skipped when no homeserver is given or
 * typed): the homeserver URL, the bot account's access token checked with
 * `whoami`, and the user's own Matrix id for MATRIX_ALLOW_FROM. A user and
 * password instead of a token are set in .env by hand (README: Matrix).
 */
import { ConfigError } from '../../errors/index.js';
import { botApiFetch, unavailable } from '../../onboard/checks.js';
import { existingValue, maskSecret, mergeIds, progress, type StepContext } from '../../onboard/context.js';

/** A Matrix user id as the spec has it: `@localpart:server`. */
const USER_ID = /^@[a-z0-9._=/+-]+:[A-Za-z0-9.-]+(:\d+)?$/;

/** The Matrix step (skipped when no homeserver is given or typed). */
export async function matrixStep(ctx: StepContext): Promise<void> {
  const prompter = ctx.prompter;
  const currentUrl = existingValue(ctx, 'MATRIX_HOMESERVER_URL');
  let url = ctx.flags['matrix-homeserver']?.trim();
  if (url === undefined && prompter) {
    url = await prompter.ask('Matrix homeserver URL of the bot account (https://…)', {
      default: currentUrl,
      defaultLabel: currentUrl ? `Enter keeps ${currentUrl}` : 'Enter to skip',
    });
  }
  if (!url) return;
  if (!/^https?:\/\//.test(url))
    throw new ConfigError(`"${url}" is not a homeserver URL (https://matrix.example.org)`);
  const currentToken = existingValue(ctx, 'MATRIX_ACCESS_TOKEN');
  let token = ctx.flags['matrix-token']?.trim();
  if (token === undefined && prompter) {
    token = await prompter.ask(
      "the bot account's access token (Element: Settings → Help & About → Access Token) (hidden)",
      {
        hidden: true,
        default: currentToken,
        defaultLabel: currentToken ? `Enter keeps ${maskSecret(currentToken)}` : 'Enter to skip',
      },
    );
  }
  if (!token) {
    progress(
      ctx,
      '  MATRIX_ACCESS_TOKEN is empty: set it (or MATRIX_USER_ID + MATRIX_PASSWORD) in .env to turn Matrix on',
    );
    ctx.updates['MATRIX_HOMESERVER_URL'] = url;
    return;
  }
  const bot = await whoami(url, token, prompter?.signal);
  progress(ctx, `✓ Matrix accepts the token: bot ${bot}`);
  ctx.updates['MATRIX_HOMESERVER_URL'] = url;
  ctx.updates['MATRIX_ACCESS_TOKEN'] = token;
  const current = existingValue(ctx, 'MATRIX_ALLOW_FROM');
  let ids = ctx.flags['matrix-allow-from'];
  if (ids === undefined && prompter && !current)
    ids = await prompter.ask('your own Matrix id, so the bot answers you (@you:example.org)', {
      defaultLabel: 'Enter to skip',
    });
  if (ids) ctx.updates['MATRIX_ALLOW_FROM'] = mergeIds(current, ids.split(',').map(checkMatrixUserId));
}

/** The user id the token belongs to (`whoami`). */
export async function whoami(url: string, token: string, signal?: AbortSignal): Promise<string> {
  const res = await botApiFetch({
    service: 'Matrix',
    apiRoot: url,
    url: `${url.replace(/\/+$/, '')}/_matrix/client/v3/account/whoami`,
    init: { headers: { authorization: `Bearer ${token}` } },
    signal,
  });
  const body = (await res.json().catch(() => ({}))) as { user_id?: unknown; errcode?: unknown };
  if (res.ok && typeof body.user_id === 'string') return body.user_id;
  if (res.status === 401 || res.status === 403)
    throw new ConfigError(
      `the Matrix homeserver refused the access token (${String(body.errcode ?? res.status)})`,
    );
  throw unavailable(`Matrix's whoami answered ${res.status}: try again later`);
}

/** A Matrix allow-list entry as typed: `@user:server` or `*`. */
export function checkMatrixUserId(text: string): string {
  const id = text.trim();
  if (id === '*' || USER_ID.test(id)) return id;
  throw new ConfigError(`"${id}" is not a Matrix user id (it looks like @you:example.org)`);
}
