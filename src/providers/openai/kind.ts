/** The `openai` provider kind: an OpenAI-compatible endpoint (OpenAI, OpenRouter, Ollama, vLLM…). */

import type { ProviderKindOptions } from '../kind-options.js';
import type { LLMProvider } from '../types.js';
import { OpenAIProvider } from './provider.js';

/** Builds an OpenAIProvider for one configured model (the `openai` entry of PROVIDER_KINDS). */
export function createOpenAIKind(options: ProviderKindOptions): LLMProvider {
  const m = options.endpoint;
  return new OpenAIProvider({
    apiKey: m.apiKey ?? '',
    baseURL: m.baseURL,
    model: m.model,
    timeoutMs: options.timeoutMs,
    maxRetries: options.maxRetries,
    promptCache: options.promptCache,
    logger: options.logger,
    ...(options.primary ? {} : { settings: { url: m.setting, key: m.keyVar ?? m.setting } }),
    ...(options.primary && options.transcribeModel ? { transcribeModel: options.transcribeModel } : {}),
  });
}
