/**
 * What the provider tells the fallback chain: "this model cannot be used now"
 * (unknown model, spent quota or credit) as PROVIDER_MODEL_UNAVAILABLE, a
 * server's Retry-After on the error, `failFast` (another model waits) skipping
 * retries that would only delay, and messages naming a fallback's own settings.
 * Against the fake OpenAI server; a refused connection is a closed port.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppError, ProviderError } from '../../../src/errors/index.js';
import type { OpenAIProviderOptions } from '../../../src/providers/openai/provider.js';
import type { ChatMessage } from '../../../src/providers/types.js';
import { closedPort } from '../../fakes/net.js';
import { providerFor } from '../../fakes/openai-provider.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../fakes/openai-server.js';
import { rejectedWith } from '../../fakes/rejection.js';

const hi: ChatMessage[] = [{ role: 'user', content: 'hi' }];
let fake: FakeOpenAI;

beforeEach(async () => {
  fake = await startFakeOpenAI();
});
afterEach(async () => {
  await fake.close();
});

const provider = (options: Partial<OpenAIProviderOptions> = {}) => providerFor(fake, options);

const failure = (promise: Promise<unknown>) => rejectedWith(ProviderError, promise);

describe('OpenAIProvider: a model that cannot be used now', () => {
  it.each([
    [
      'OpenAI model_not_found (404)',
      404,
      { message: 'The model `gpt-9` does not exist', code: 'model_not_found' },
    ],
    ['Ollama (404)', 404, { message: "model 'llama9' not found, try pulling it first" }],
    ['OpenRouter (400)', 400, { message: 'gpt-9 is not a valid model ID' }],
    [
      'out of credit (402)',
      402,
      { message: 'Insufficient credits. Add more using https://openrouter.ai/credits' },
    ],
    ['spent quota (429 insufficient_quota)', 429, { message: 'quota', code: 'insufficient_quota' }],
    [
      'spent quota by its text (429)',
      429,
      { message: 'You exceeded your current quota, please check your plan' },
    ],
  ])('%s is PROVIDER_MODEL_UNAVAILABLE, not retried', async (_name, status, error) => {
    fake.setResponder(() => ({ status, error }));
    const err = await failure(provider({ maxRetries: 2 }).chat({ messages: hi }));
    expect(err.code).toBe('PROVIDER_MODEL_UNAVAILABLE');
    expect(err.transient).toBe(false);
    expect(err.status).toBe(status);
    expect(fake.requests).toHaveLength(1);
  });

  it('keeps other 400s and 404s the request’s fault, and a plain 429 a rate limit', async () => {
    fake.enqueue(
      { status: 400, error: { message: "Invalid value for 'temperature'" } },
      { status: 404, error: { message: 'no route /v1/chat/completions' } },
      { status: 429, error: { message: 'Rate limit reached for requests' } },
    );
    const p = provider({ maxRetries: 0 });
    expect((await failure(p.chat({ messages: hi }))).code).toBe('PROVIDER_BAD_REQUEST');
    expect((await failure(p.chat({ messages: hi }))).code).toBe('PROVIDER_BAD_REQUEST');
    expect((await failure(p.chat({ messages: hi }))).code).toBe('PROVIDER_RATE_LIMITED');
  });

  it('still reads a context-length 400 as CONTEXT_LENGTH_EXCEEDED', async () => {
    fake.enqueue({
      status: 400,
      error: {
        message: "This model's maximum context length is 8192 tokens",
        code: 'context_length_exceeded',
      },
    });
    expect((await failure(provider({ maxRetries: 0 }).chat({ messages: hi }))).code).toBe(
      'CONTEXT_LENGTH_EXCEEDED',
    );
  });
});

describe('OpenAIProvider: Retry-After and failFast', () => {
  it('puts a Retry-After in seconds on the error', async () => {
    fake.setResponder(() => ({
      status: 429,
      error: { message: 'slow down' },
      headers: { 'retry-after': '30' },
    }));
    const err = await failure(provider({ maxRetries: 0 }).chat({ messages: hi }));
    expect(err.retryAfterMs).toBe(30_000);
  });

  it('waits out a short Retry-After and answers', async () => {
    fake.enqueue({ status: 503, error: { message: 'busy' }, headers: { 'retry-after-ms': '50' } });
    fake.enqueue({ content: 'after the pause' });
    const started = Date.now();
    const reply = await provider({ maxRetries: 1 }).chat({ messages: hi, failFast: true });
    expect(reply.content).toBe('after the pause');
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });

  it('with failFast, does not wait out a Retry-After longer than the retry cap', async () => {
    fake.setResponder(() => ({
      status: 429,
      error: { message: 'slow down' },
      headers: { 'retry-after': '30' },
    }));
    const started = Date.now();
    const err = await failure(
      provider({ maxRetries: 2, retryMaxMs: 8_000 }).chat({ messages: hi, failFast: true }),
    );
    expect(err.code).toBe('PROVIDER_RATE_LIMITED');
    expect(fake.requests).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('without failFast, retries that 429 after the capped delay', async () => {
    fake.enqueue({ status: 429, error: { message: 'slow down' }, headers: { 'retry-after': '30' } });
    fake.enqueue({ content: 'fine now' });
    const reply = await provider({ maxRetries: 1, retryMaxMs: 20 }).chat({ messages: hi });
    expect(reply.content).toBe('fine now');
    expect(fake.requests).toHaveLength(2);
  });

  it('with failFast, does not retry a refused connection or a time-out; still retries a 503', async () => {
    const port = await closedPort();
    const refused = provider({ baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 2, retryBaseMs: 300 });
    const started = Date.now();
    expect((await failure(refused.chat({ messages: hi, failFast: true }))).code).toBe('PROVIDER_UNREACHABLE');
    expect(Date.now() - started).toBeLessThan(250);

    fake.enqueue({ content: 'late', delayMs: 5_000 });
    const hang = await failure(
      provider({ timeoutMs: 200, maxRetries: 2 }).chat({ messages: hi, failFast: true }),
    );
    expect(hang.code).toBe('PROVIDER_UNREACHABLE');
    expect(fake.requests).toHaveLength(1);

    fake.enqueue({ status: 503, error: { message: 'blip' } }, { content: 'back' });
    expect((await provider({ maxRetries: 1 }).chat({ messages: hi, failFast: true })).content).toBe('back');
    expect(fake.requests).toHaveLength(3);
  });

  it('names a fallback entry’s own settings in its messages', async () => {
    const port = await closedPort();
    const settings = { url: 'MAGPIE_FALLBACK_MODELS', key: 'MISTRAL_API_KEY' };
    const down = provider({ baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0, settings });
    const err = await failure(down.chat({ messages: hi }));
    expect(err.message).toContain('check MAGPIE_FALLBACK_MODELS');
    expect(err.message).not.toContain('OPENAI_BASE_URL');
    fake.enqueue({ status: 401, error: { message: 'bad key' } });
    const auth = await failure(provider({ maxRetries: 0, settings }).chat({ messages: hi }));
    expect(auth.message).toContain('check MISTRAL_API_KEY');
  });

  it('sends no Authorization header to an endpoint without a key', async () => {
    fake.enqueue({ content: 'no key needed' }, { content: 'with key' });
    expect((await provider({ apiKey: '' }).chat({ messages: hi })).content).toBe('no key needed');
    expect(fake.requests[0]?.headers.authorization).toBeUndefined();
    await provider().chat({ messages: hi });
    expect(fake.requests[1]?.headers.authorization).toBe('Bearer sk-test-key');
  });

  it('is an AppError with exit code 3 for an unavailable model', async () => {
    fake.enqueue({ status: 402, error: { message: 'no credit' } });
    const err = await failure(provider({ maxRetries: 0 }).chat({ messages: hi }));
    expect(err).toBeInstanceOf(AppError);
    expect(err.exitCode).toBe(3);
  });
});
