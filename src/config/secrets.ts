/**
 * The secret values in a Config: keys (LLM and fallback models, web search),
 * bot tokens, the dashboard token, and the credentials inside configured URLs
 * (user, password, secret-looking query values). Loggers, doctor and error lines redact them in every spelling.
 */
import type { Config } from './index.js';

const SECRET_PARAM = /key|token|secret|passw(or)?d|pwd|signature|sig|auth|credential/i;

/** A user name alone (no password) this long is taken for a token (`https://TOKEN@host`). */
const TOKEN_USERNAME_CHARS = 16;

/**
 * The credentials carried by a URL: its password (as written and decoded), a user name
 * that stands alone and looks like a token, and the values of secret-looking query
 * parameters. A user name beside a password (`magpie`, `default`) is not a secret: it
 * would blank that word everywhere. Empty for text that is not a URL.
 *
 * @example urlCredentials('redis://magpie:hunter2@10.0.0.5:6379') // ['hunter2']
 */
export function urlCredentials(text: string | undefined): string[] {
  if (!text || !URL.canParse(text)) return [];
  const url = new URL(text);
  const found = [url.password, safeDecode(url.password)];
  if (!url.password && url.username.length >= TOKEN_USERNAME_CHARS) {
    found.push(url.username, safeDecode(url.username));
  }
  for (const [name, value] of url.searchParams) if (SECRET_PARAM.test(name)) found.push(value);
  return [...new Set(found.filter((v) => v !== ''))];
}

/**
 * Every secret value of `config`, for `createLogger({ secrets })`, doctor and error lines.
 *
 * @example createLogger({ level, secrets: secretValues(config) })
 */
export function secretValues(config: Config): string[] {
  const values = [
    config.llm.apiKey,
    config.telegram.token,
    config.discord.token,
    config.dashboard.token,
    ...urlCredentials(config.llm.baseURL),
    ...urlCredentials(config.redis.url),
    ...urlCredentials(config.telegram.apiRoot),
    ...urlCredentials(config.discord.apiRoot),
    config.search.brave.apiKey,
    config.search.tavily.apiKey,
    ...urlCredentials(config.search.brave.apiRoot),
    ...urlCredentials(config.search.tavily.apiRoot),
    ...urlCredentials(config.search.searxng.url),
    ...config.llm.models.flatMap((m) => [m.apiKey, ...urlCredentials(m.baseURL)]),
  ];
  return [...new Set(values.filter((v): v is string => typeof v === 'string' && !isPlaceholder(v)))];
}

/**
 * A value that stands in for a key a local server does not need (`none`, `ollama`):
 * a short lowercase word. Redacting it would blank that word in every line.
 */
function isPlaceholder(value: string): boolean {
  return /^[a-z]{0,7}$/.test(value);
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch (err) {
    if (err instanceof URIError) return text; // not percent-encoded after all: the text is the value
    throw err;
  }
}
