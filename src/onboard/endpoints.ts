/**
 * The model endpoints `magpie onboard` offers, with their base URLs filled in:
 * OpenAI, OpenRouter and the local servers (Ollama, llama.cpp, vLLM), plus a
 * custom URL. Local servers need no key; magpie still wants OPENAI_API_KEY
 * set, so they get the placeholder "none".
 */

/** One choice of endpoint. */
export interface EndpointPreset {
  /** What the user may type instead of the number. */
  id: 'openai' | 'openrouter' | 'ollama' | 'llamacpp' | 'vllm' | 'custom';
  label: string;
  /** undefined for `custom`: the user types it. */
  baseURL: string | undefined;
  /** Whether the endpoint wants a key (local servers do not). */
  needsKey: boolean;
  /** The model offered first when the endpoint lists it. */
  defaultModel: string | undefined;
}

/** Every choice, in the order the question lists them. */
export const ENDPOINT_PRESETS: readonly EndpointPreset[] = [
  {
    id: 'openai',
    label: 'OpenAI',
    baseURL: 'https://api.openai.com/v1',
    needsKey: true,
    defaultModel: 'gpt-4o-mini',
  },
  {
    id: 'openrouter',
    label: 'OpenRouter',
    baseURL: 'https://openrouter.ai/api/v1',
    needsKey: true,
    defaultModel: 'openai/gpt-4o-mini',
  },
  {
    id: 'ollama',
    label: 'Ollama (local)',
    baseURL: 'http://127.0.0.1:11434/v1',
    needsKey: false,
    defaultModel: undefined,
  },
  {
    id: 'llamacpp',
    label: 'llama.cpp server (local)',
    baseURL: 'http://127.0.0.1:8080/v1',
    needsKey: false,
    defaultModel: undefined,
  },
  {
    id: 'vllm',
    label: 'vLLM (local)',
    baseURL: 'http://127.0.0.1:8000/v1',
    needsKey: false,
    defaultModel: undefined,
  },
  {
    id: 'custom',
    label: 'another OpenAI-compatible URL',
    baseURL: undefined,
    needsKey: true,
    defaultModel: undefined,
  },
];

/** What OPENAI_API_KEY holds for an endpoint that wants no key. */
export const NO_KEY = 'none';

/** The preset whose base URL is `baseURL` (trailing slashes ignored), else `custom`. */
export function presetFor(baseURL: string | undefined): EndpointPreset {
  const wanted = baseURL?.replace(/\/+$/, '');
  return ENDPOINT_PRESETS.find((p) => p.baseURL === wanted) ?? customPreset();
}

/** A choice as typed: its number (1-based) or its id, case-insensitive; undefined when neither. */
export function presetByAnswer(answer: string): EndpointPreset | undefined {
  const text = answer.trim().toLowerCase();
  const n = Number(text);
  if (Number.isInteger(n) && n >= 1 && n <= ENDPOINT_PRESETS.length) return ENDPOINT_PRESETS[n - 1];
  return ENDPOINT_PRESETS.find((p) => p.id === text || p.label.toLowerCase() === text);
}

/**
 * A base URL as typed, checked: http(s), no user name or password (the key has
 * its own question) unless `allowCredentials` (a SearXNG behind basic auth), no
 * trailing slash. Returns a reason instead when it is not usable.
 */
export function checkBaseURL(
  text: string,
  options: { allowCredentials?: boolean } = {},
): { ok: true; url: string } | { ok: false; reason: string } {
  const trimmed = text.trim();
  if (!URL.canParse(trimmed))
    return { ok: false, reason: `"${trimmed}" is not a URL (e.g. http://127.0.0.1:8080/v1)` };
  const url = new URL(trimmed);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { ok: false, reason: `"${url.protocol}" URLs are not supported: use http or https` };
  }
  if (!options.allowCredentials && (url.username || url.password)) {
    return {
      ok: false,
      reason: 'the URL must not hold a user name or password: the key has its own question',
    };
  }
  return { ok: true, url: trimmed.replace(/\/+$/, '') };
}

function customPreset(): EndpointPreset {
  return ENDPOINT_PRESETS.find((p) => p.id === 'custom')!;
}
