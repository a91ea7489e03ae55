/** An OpenAIProvider pointed at a fake OpenAI server, with the settings the provider unit tests share. */
import { OpenAIProvider, type OpenAIProviderOptions } from '../../src/providers/openai/provider.js';

/** A provider for `fake` (key `sk-test-key`, model `test-model`, 1 ms retry back-off), with `options` on top. */
export function providerFor(
  fake: { baseURL: string },
  options: Partial<OpenAIProviderOptions> = {},
): OpenAIProvider {
  return new OpenAIProvider({
    apiKey: 'sk-test-key',
    baseURL: fake.baseURL,
    model: 'test-model',
    retryBaseMs: 1,
    ...options,
  });
}
