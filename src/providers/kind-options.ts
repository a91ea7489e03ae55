/**
 * What a provider kind's factory gets to build one model's provider (the kinds
 * are listed in registry.ts; each kind's factory lives in its own folder).
 */
import type { Config, ModelEndpointConfig } from '../config/index.js';
import type { Logger } from '../log/index.js';
import type { LLMProvider } from './types.js';

/** What a factory gets to build one model's provider. */
export interface ProviderKindOptions {
  /** The model's endpoint, key and name (MAGPIE_MODEL or one of MAGPIE_FALLBACK_MODELS). */
  endpoint: ModelEndpointConfig;
  /** Time limit of one call in ms. */
  timeoutMs: number;
  /** Retries of one call (transient failures). */
  maxRetries: number;
  /** Prompt-cache hints (MAGPIE_PROMPT_CACHE). */
  promptCache: Config['llm']['promptCache'];
  /** The model that transcribes voice (first model only). */
  transcribeModel?: string;
  /** True for the first model (MAGPIE_MODEL): its errors name the MAGPIE_ settings. */
  primary: boolean;
  logger: Logger;
}

/** Builds one model's provider. */
export type ProviderFactory = (options: ProviderKindOptions) => Promise<LLMProvider>;
