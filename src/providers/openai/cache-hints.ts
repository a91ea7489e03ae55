/**
 * Prompt-cache hints for OpenAI-compatible endpoints, each sent only where it
 * is understood: `prompt_cache_key` (a hash of the session) for OpenAI's own
 * API, and Anthropic-style `cache_control` breakpoints for Claude models
 * reached through routers such as OpenRouter or LiteLLM (Claude caches
 * nothing without them). `MAGPIE_PROMPT_CACHE=off` sends neither.
 */
import { createHash } from 'node:crypto';
import type { OpenAI } from 'openai';

/** `auto`: hints where the endpoint and model take them; `off`: none. */
export type PromptCacheMode = 'auto' | 'off';

/** Which hints a request gets. */
export interface CacheHints {
  /** Send `prompt_cache_key`. */
  promptCacheKey: boolean;
  /** Mark cache breakpoints with `cache_control` on message content. */
  cacheControl: boolean;
}

type SdkMessage = OpenAI.ChatCompletionMessageParam;
/** A text part with Anthropic's breakpoint marker (routers pass it through; the SDK types do not know it). */
type MarkedPart = OpenAI.ChatCompletionContentPartText & { cache_control?: { type: 'ephemeral' } };

const EPHEMERAL = { type: 'ephemeral' } as const;

/** True for model names of Anthropic's Claude (`claude-sonnet-4`, `anthropic/claude-3.5-haiku`, …). */
export function isClaudeModel(model: string): boolean {
  return /claude/i.test(model);
}

/**
 * The hints for a model on an endpoint. OpenAI's API takes `prompt_cache_key`
 * (other servers may refuse unknown fields, so only there); Claude model names
 * elsewhere get `cache_control`.
 */
export function cacheHintsFor(baseURL: string, model: string, mode: PromptCacheMode): CacheHints {
  if (mode === 'off') return { promptCacheKey: false, cacheControl: false };
  const openai = new URL(baseURL).hostname === 'api.openai.com';
  return { promptCacheKey: openai, cacheControl: !openai && isClaudeModel(model) };
}

/** The `prompt_cache_key` of a session: a hash, so chat ids never reach the provider. */
export function promptCacheKey(sessionKey: string): string {
  return `magpie-${createHash('sha256').update(sessionKey).digest('hex').slice(0, 32)}`;
}

/**
 * Copies of `messages` with `cache_control` breakpoints: after the static part
 * of the system prompt (shared by every session), on the last message (the
 * whole conversation so far) and on the last user message when that is not
 * the last (a long tool loop stays within reach of a cached prefix). At most
 * three of Anthropic's four breakpoints.
 */
export function withCacheControl(messages: SdkMessage[], staticChars: number | undefined): SdkMessage[] {
  const out = [...messages];
  const first = out[0];
  if (first?.role === 'system' && typeof first.content === 'string') {
    const text = first.content;
    const cut = staticChars !== undefined && staticChars > 0 && staticChars < text.length ? staticChars : 0;
    const parts: MarkedPart[] =
      cut > 0
        ? [
            { type: 'text', text: text.slice(0, cut), cache_control: EPHEMERAL },
            { type: 'text', text: text.slice(cut) },
          ]
        : [{ type: 'text', text, cache_control: EPHEMERAL }];
    out[0] = { role: 'system', content: parts };
  }
  const last = out.length - 1;
  if (last > 0) out[last] = marked(out[last]!);
  let lastUser = -1;
  for (let i = last - 1; i > 0; i -= 1) {
    if (out[i]!.role === 'user') {
      lastUser = i;
      break;
    }
  }
  if (lastUser > 0) out[lastUser] = marked(out[lastUser]!);
  return out;
}

/** The message with a breakpoint on its last content part (string content becomes one text part). */
function marked(message: SdkMessage): SdkMessage {
  if (message.role !== 'user' && message.role !== 'tool' && message.role !== 'system') return message;
  const content = message.content;
  if (typeof content === 'string') {
    if (content === '') return message;
    const part: MarkedPart = { type: 'text', text: content, cache_control: EPHEMERAL };
    return { ...message, content: [part] } as SdkMessage;
  }
  if (!Array.isArray(content) || content.length === 0) return message;
  const parts = [...content] as unknown as Array<Record<string, unknown>>;
  parts[parts.length - 1] = { ...parts.at(-1), cache_control: EPHEMERAL };
  return { ...message, content: parts } as unknown as SdkMessage;
}
