/**
 * The provider kinds: a factory per kind of model endpoint, keyed by name.
 * A new kind is a new file under src/providers/<kind>/ plus one line in
 * {@link PROVIDER_KINDS}; the builder (src/app/build-provider.ts) does not change.
 * Each factory loads its SDK lazily, so only the kinds configured are loaded.
 */
import type { ModelEndpointConfig } from '../config/index.js';
import type { ProviderFactory, ProviderKindOptions } from './kind-options.js';
import type { LLMProvider } from './types.js';

/** Every provider kind magpie speaks. */
export const PROVIDER_KINDS = {
  openai: async (options) => (await import('./openai/kind.js')).createOpenAIKind(options),
} satisfies Record<string, ProviderFactory>;

export type ProviderKind = keyof typeof PROVIDER_KINDS;

/** The kind of a configured endpoint: every one is OpenAI-compatible today (read a `kind` setting here when the config has one). */
export function kindOf(_endpoint: ModelEndpointConfig): ProviderKind {
  return 'openai';
}

/** Builds the provider of one configured model through its kind's factory. */
export function createModelProvider(options: ProviderKindOptions): Promise<LLMProvider> {
  return PROVIDER_KINDS[kindOf(options.endpoint)](options);
}
