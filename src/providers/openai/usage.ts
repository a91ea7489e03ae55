/**
 * Reads the `usage` object of a chat completion, whichever dialect the
 * endpoint speaks: OpenAI's `prompt_tokens_details.cached_tokens`,
 * OpenRouter's `prompt_tokens_details.cache_write_tokens`, Anthropic-style
 * `cache_read_input_tokens` / `cache_creation_input_tokens` (LiteLLM and
 * other routers pass them through) and DeepSeek's `prompt_cache_hit_tokens`.
 * Fields that are absent or not numbers count as not reported.
 */
import type { Usage } from '../types.js';

/**
 * Our Usage from an endpoint's usage object, or undefined when it holds no
 * token counts. `promptTokens` always includes cached and cache-written
 * tokens: an endpoint that reports them apart from `prompt_tokens` (as
 * Anthropic's own API does) has them added.
 *
 * @example
 * toUsage({ prompt_tokens: 1200, completion_tokens: 30, prompt_tokens_details: { cached_tokens: 1024 } })
 * // → { promptTokens: 1200, completionTokens: 30, totalTokens: 1230, cachedTokens: 1024 }
 */
export function toUsage(raw: unknown): Usage | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const u = raw as Record<string, unknown>;
  const details = (u.prompt_tokens_details ?? {}) as Record<string, unknown>;
  const prompt = count(u.prompt_tokens);
  const completion = count(u.completion_tokens);
  if (prompt === undefined && completion === undefined) return undefined;
  const cached =
    count(details.cached_tokens) ?? count(u.cache_read_input_tokens) ?? count(u.prompt_cache_hit_tokens);
  const written = count(details.cache_write_tokens) ?? count(u.cache_creation_input_tokens);
  let promptTokens = prompt ?? 0;
  const completionTokens = completion ?? 0;
  let adjusted = false;
  if ((cached ?? 0) + (written ?? 0) > promptTokens) {
    promptTokens += (cached ?? 0) + (written ?? 0);
    adjusted = true;
  }
  const total = count(u.total_tokens);
  return {
    promptTokens,
    completionTokens,
    totalTokens: adjusted || total === undefined ? promptTokens + completionTokens : total,
    ...(cached !== undefined ? { cachedTokens: cached } : {}),
    ...(written !== undefined ? { cacheWriteTokens: written } : {}),
  };
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined;
}
