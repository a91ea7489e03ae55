/**
 * The secret values in a Config: keys (LLM, fallback and embedding models, web search),
 * each channel's secrets (its descriptor names them: bot tokens, credentials in
 * its API root), the dashboard token, the backup passphrase, the Redis client key (REDIS_TLS_KEY's text), and the credentials inside configured URLs
 * (user, password, secret-looking query values). Loggers, doctor and error lines redact them in every spelling.
 */
import type { Config } from './index.js';
import { urlCredentials } from './url-credentials.js';

export { urlCredentials } from './url-credentials.js';

/**
 * Every secret value of `config`, for `createLogger({ secrets })`, doctor and error lines.
 *
 * @example createLogger({ level, secrets: secretValues(config) })
 */
export function secretValues(config: Config): string[] {
  const values = [
    config.llm.apiKey,
    ...config.channelSecrets,
    config.dashboard.token,
    config.backup.passphrase,
    ...urlCredentials(config.llm.baseURL),
    ...urlCredentials(config.redis.url),
    config.redis.password,
    config.redis.sentinel?.sentinelPassword,
    config.redis.tls?.key,
    config.search.brave.apiKey,
    config.search.tavily.apiKey,
    ...urlCredentials(config.search.brave.apiRoot),
    ...urlCredentials(config.search.tavily.apiRoot),
    ...urlCredentials(config.search.searxng.url),
    ...config.llm.models.flatMap((m) => [m.apiKey, ...urlCredentials(m.baseURL)]),
    config.llm.embedding?.apiKey,
    ...(config.llm.embedding ? urlCredentials(config.llm.embedding.baseURL) : []),
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
