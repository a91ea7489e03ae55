/**
 * The generic `magpie doctor` check of a chat platform's bot token: one request
 * only a valid token passes (each channel's `doctor.ts` describes its own, e.g.
 * getMe), skipped when the channel has no token. The request URL or its error
 * text can carry the token, so neither is ever printed.
 */
import { type Check, type CheckResult, failed, pass, skipped } from './doctor.js';

/** How one platform's bot token is checked. */
export interface BotCheckSpec {
  name: string;
  /** The configured token; none skips the check (the channel is off). */
  token: string | undefined;
  tokenVariable: string;
  /** The platform's API root, and the variable that overrides it. */
  root: string;
  rootVariable: string;
  /** The request that only a valid token passes. */
  request(root: string, token: string): { url: string; headers: Record<string, string> };
  /** The bot's name shown when the answer accepts the token; undefined when it does not. */
  botName(res: Response, body: unknown): string | undefined;
  /** Why an answer with `status` refused the token. */
  refusal(status: number): string;
  /** What to do about a refused token. */
  fix: string;
}

/** A check that asks the platform who the bot is, never printing the token or the URL that carries it. */
export function botCheck(spec: BotCheckSpec): Check {
  return {
    name: spec.name,
    async run(signal) {
      if (!spec.token) return skipped(`${spec.tokenVariable} not set (channel off)`);
      const { url, headers } = spec.request(spec.root, spec.token);
      const res = await reach(url, headers, signal);
      if (!res) return unreachable(spec.root, spec.rootVariable);
      const body: unknown = await res.json().catch(() => ({}));
      const bot = spec.botName(res, body);
      if (bot !== undefined) return pass(`bot ${bot}`);
      return failed(spec.refusal(res.status), spec.fix);
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
