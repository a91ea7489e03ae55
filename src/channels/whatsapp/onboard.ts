/**
 * The WhatsApp step of `magpie onboard` (skipped when no access token is
 * given or typed): the token and the phone number id, checked together with
 * the Graph API; the app secret; the verify token (a random one unless you
 * give one); your own number for WHATSAPP_ALLOW_FROM; and the port the
 * gateway serves webhooks on (MAGPIE_WEBHOOK_PORT). Ends by saying what to
 * enter in the Meta app's webhook settings.
 */
import { randomBytes } from 'node:crypto';
import { phoneDigits } from '../../config/env-values.js';
import { ConfigError, describeError } from '../../errors/index.js';
import { unavailable } from '../../onboard/checks.js';
import {
  existingValue,
  maskSecret,
  mergeIds,
  missingFlag,
  progress,
  type StepContext,
} from '../../onboard/context.js';
import { checkBaseURL } from '../../onboard/endpoints.js';
import { WHATSAPP_API_ROOT, WHATSAPP_WEBHOOK_PATH } from './api-root.js';
import { GraphClient, GraphError, graphFailure } from './graph.js';

/** The port offered for webhooks when none is set. */
const DEFAULT_WEBHOOK_PORT = '8790';

/** The WhatsApp step (skipped when no access token is given or typed). */
export async function whatsappStep(ctx: StepContext): Promise<void> {
  const token = await secret(
    ctx,
    'whatsapp-token',
    'WHATSAPP_ACCESS_TOKEN',
    'WhatsApp Cloud API access token',
    true,
  );
  if (!token) return;
  const root = apiRoot(ctx);
  const phoneNumberId = await text(
    ctx,
    'whatsapp-phone-number-id',
    'WHATSAPP_PHONE_NUMBER_ID',
    'its Phone number ID (Meta app → WhatsApp → API Setup)',
    (v) => (/^\d{5,30}$/.test(v) ? v : undefined),
    'a Phone number ID is digits only (not the phone number itself)',
  );
  const number = await checkNumber(root, token, phoneNumberId, ctx.prompter?.signal);
  progress(ctx, `✓ WhatsApp accepts the token for ${number}`);
  const appSecret = await secret(
    ctx,
    'whatsapp-app-secret',
    'WHATSAPP_APP_SECRET',
    "the Meta app's App secret (App settings → Basic)",
  );
  const verifyToken =
    ctx.flags['whatsapp-verify-token']?.trim() ||
    existingValue(ctx, 'WHATSAPP_VERIFY_TOKEN') ||
    randomBytes(18).toString('base64url');
  const port = await text(
    ctx,
    'webhook-port',
    'MAGPIE_WEBHOOK_PORT',
    'the port the gateway serves webhooks on (your HTTPS proxy or tunnel forwards to it)',
    (v) => (/^\d{1,5}$/.test(v) && Number(v) >= 1 && Number(v) <= 65535 ? v : undefined),
    'a port is a number from 1 to 65535',
    DEFAULT_WEBHOOK_PORT,
  );
  Object.assign(ctx.updates, {
    WHATSAPP_ACCESS_TOKEN: token,
    WHATSAPP_PHONE_NUMBER_ID: phoneNumberId,
    WHATSAPP_APP_SECRET: appSecret,
    WHATSAPP_VERIFY_TOKEN: verifyToken,
    MAGPIE_WEBHOOK_PORT: port,
    ...(ctx.flags['whatsapp-api-root'] !== undefined ? { WHATSAPP_API_ROOT: root } : {}),
  });
  await allowList(ctx);
  progress(
    ctx,
    `  In the Meta app → WhatsApp → Configuration → Webhook: Callback URL https://<your host>${WHATSAPP_WEBHOOK_PATH}\n` +
      `  (forwarded to 127.0.0.1:${port}), Verify token: WHATSAPP_VERIFY_TOKEN from .env; then subscribe to "messages".`,
  );
}

/** The number the token may send from (GET /<phone number id>); a refusal is the user's to fix. */
async function checkNumber(root: string, token: string, phoneNumberId: string, signal?: AbortSignal) {
  try {
    const { number, name } = await new GraphClient({
      root,
      token,
      phoneNumberId,
      timeoutMs: 15_000,
    }).phoneNumber(signal);
    return `${number}${name ? ` (${name})` : ''}`;
  } catch (err) {
    if (err instanceof GraphError && err.status >= 400 && err.status < 500) {
      throw new ConfigError(
        `WhatsApp refused the token or the phone number id (${graphFailure(err)}): copy both again from the Meta app`,
      );
    }
    throw unavailable(`cannot reach WhatsApp at ${root}: ${graphFailure(err)}`, err);
  }
}

/** Your own number for WHATSAPP_ALLOW_FROM (merged with what is there), or the flag's list. */
async function allowList(ctx: StepContext): Promise<void> {
  const current = existingValue(ctx, 'WHATSAPP_ALLOW_FROM');
  const flag = ctx.flags['whatsapp-allow-from'];
  if (flag !== undefined) {
    ctx.updates['WHATSAPP_ALLOW_FROM'] = flag
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '')
      .map(checkNumberText)
      .join(',');
    return;
  }
  const prompter = ctx.prompter;
  if (!prompter) return;
  for (;;) {
    const answer = await prompter.ask(
      'Your WhatsApp number, international form like +491701234567 (Enter to skip: others then get a pairing code)',
    );
    if (answer === '') break;
    try {
      ctx.updates['WHATSAPP_ALLOW_FROM'] = mergeIds(current, [checkNumberText(answer)]);
      return;
    } catch (err) {
      prompter.say(`  ${describeError(err)}\n`);
    }
  }
  progress(
    ctx,
    current
      ? `  WHATSAPP_ALLOW_FROM stays ${current}`
      : '  WHATSAPP_ALLOW_FROM is empty: whoever writes gets a pairing code (approve with "magpie pairing approve <code>")',
  );
}

/** An allow-list entry as typed: a number in international form (kept as `+digits`) or `*`. */
export function checkNumberText(entry: string): string {
  if (entry.trim() === '*') return '*';
  const digits = phoneDigits(entry);
  if (!digits)
    throw new ConfigError(`"${entry}" is not a phone number in international form (e.g. +491701234567)`);
  return `+${digits}`;
}

/** A secret from its flag, .env (Enter keeps it) or a hidden question; `optional`: Enter with none skips. */
async function secret(
  ctx: StepContext,
  flag: string,
  variable: string,
  question: string,
  optional = false,
): Promise<string | undefined> {
  const given = ctx.flags[flag]?.trim();
  if (given) return given;
  const current = existingValue(ctx, variable);
  const prompter = ctx.prompter;
  if (!prompter) {
    if (optional || current) return optional ? undefined : current;
    throw missingFlag(`--${flag}`, question);
  }
  for (;;) {
    const answer = await prompter.ask(`${question} (hidden)`, {
      hidden: true,
      ...(current ? { default: current } : {}),
      defaultLabel: current ? `Enter keeps ${maskSecret(current)}` : optional ? 'Enter to skip' : 'required',
    });
    if (answer !== '' || optional) return answer === '' ? undefined : answer;
  }
}

/** A value from its flag, .env or a question, checked by `check` (undefined: not valid, say `hint`). */
async function text(
  ctx: StepContext,
  flag: string,
  variable: string,
  question: string,
  check: (value: string) => string | undefined,
  hint: string,
  fallback?: string,
): Promise<string> {
  const given = ctx.flags[flag]?.trim();
  if (given) {
    const value = check(given);
    if (value === undefined) throw new ConfigError(`--${flag}: ${hint}`);
    return value;
  }
  const current = existingValue(ctx, variable) ?? fallback;
  const prompter = ctx.prompter;
  if (!prompter) {
    if (current !== undefined && check(current) !== undefined) return current;
    throw missingFlag(`--${flag}`, question);
  }
  for (;;) {
    const answer = await prompter.ask(question, current ? { default: current } : {});
    const value = check(answer);
    if (value !== undefined) return value;
    prompter.say(`  ${hint}\n`);
  }
}

/** WHATSAPP_API_ROOT from its flag or .env, else Meta's. */
function apiRoot(ctx: StepContext): string {
  const given = ctx.flags['whatsapp-api-root'];
  const checked = checkBaseURL(given ?? existingValue(ctx, 'WHATSAPP_API_ROOT') ?? WHATSAPP_API_ROOT);
  if (!checked.ok)
    throw new ConfigError(
      `${given === undefined ? 'WHATSAPP_API_ROOT in .env' : '--whatsapp-api-root'}: ${checked.reason}`,
    );
  return checked.url;
}
