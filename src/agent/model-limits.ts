/**
 * Context windows of common models (a small catalogue): an
 * exact or prefix match on the model name, a conservative default otherwise.
 * MAGPIE_CONTEXT_TOKENS (config.llm.contextTokens) overrides the table.
 */

/** Context window used when a model is not in the table. */
export const DEFAULT_CONTEXT_TOKENS = 128_000;

/** Model name prefixes and their context windows; the longest matching prefix wins. */
export const MODEL_CONTEXT_TOKENS: Readonly<Record<string, number>> = Object.freeze({
  'gpt-4o': 128_000,
  'gpt-4o-mini': 128_000,
  'gpt-4.1': 1_047_576,
  'gpt-4-turbo': 128_000,
  'gpt-4': 8_192,
  'gpt-3.5-turbo': 16_385,
  'gpt-5': 400_000,
  o1: 200_000,
  o3: 200_000,
  'o4-mini': 200_000,
  llama3: 8_192,
  'llama3.1': 128_000,
  'llama3.2': 128_000,
  mistral: 32_768,
  qwen2: 32_768,
});

/**
 * The context window of `model`: `override` when given, else the longest
 * table prefix matching the name (after any `provider/` part), else 128k.
 *
 * @example contextLimitFor('gpt-4o-2024-08-06') // 128_000
 */
export function contextLimitFor(model: string, override?: number): number {
  if (override !== undefined && override > 0) return override;
  const name = model.toLowerCase().split('/').at(-1) ?? '';
  let best: string | undefined;
  for (const prefix of Object.keys(MODEL_CONTEXT_TOKENS)) {
    if (!name.startsWith(prefix)) continue;
    if (best === undefined || prefix.length > best.length) best = prefix;
  }
  return best === undefined ? DEFAULT_CONTEXT_TOKENS : (MODEL_CONTEXT_TOKENS[best] ?? DEFAULT_CONTEXT_TOKENS);
}
