/**
 * Whether a model takes images: MAGPIE_VISION (config.vision) when set, else
 * judged from the model's name against families known to see. Decides whether
 * an image a tool returns (an MCP screenshot) is attached for the model or
 * described by a placeholder, so a text-only model never gets a request it
 * would refuse.
 */

/** Name fragments of model families that take images (matched after any `provider/` part). */
export const VISION_MODEL_PATTERNS: readonly RegExp[] = Object.freeze([
  /^gpt-4o/,
  /^gpt-4\.1/,
  /^gpt-4-turbo/,
  /^gpt-4-vision/,
  /^gpt-5/,
  /^o1(?!-mini)/,
  /^o3(?!-mini)/,
  /^o4-mini/,
  /^chatgpt-4o/,
  /^claude-(3|opus-4|sonnet-4|haiku-4|.*-4)/,
  /^gemini/,
  /^gemma-?3/,
  /^pixtral/,
  /^mistral-(small|medium)-(2503|3)/,
  /^grok-(2-vision|4)/,
  /llava/,
  /-vl\b|-vl-|vl:|vision/,
  /^minicpm-v/,
  /^moondream/,
  /^llama-?4/,
]);

/**
 * True when `model` takes image input.
 *
 * @param override `true`/`false` from MAGPIE_VISION wins; `'auto'` (the default) judges by name.
 * @example visionCapable('openai/gpt-4o-mini') // true
 * @example visionCapable('llama3.1:8b') // false
 */
export function visionCapable(model: string, override: boolean | 'auto' = 'auto'): boolean {
  if (override !== 'auto') return override;
  const name = model.toLowerCase().split('/').at(-1) ?? '';
  return VISION_MODEL_PATTERNS.some((pattern) => pattern.test(name));
}
