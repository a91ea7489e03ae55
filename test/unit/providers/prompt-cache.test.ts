/**
 * Prompt caching at the provider: usage parsing in every dialect (and absent
 * fields), the cache hints each endpoint gets, and a request body whose
 * stable fields come first — through the real OpenAIProvider and the fake
 * OpenAI server.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  cacheHintsFor,
  isClaudeModel,
  promptCacheKey,
  withCacheControl,
} from '../../../src/providers/openai/cache-hints.js';
import { OpenAIProvider } from '../../../src/providers/openai/provider.js';
import { toUsage } from '../../../src/providers/openai/usage.js';
import type { ChatMessage, ToolDefinition } from '../../../src/providers/types.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../fakes/openai-server.js';

describe('toUsage', () => {
  it('reads OpenAI’s prompt_tokens_details.cached_tokens', () => {
    expect(
      toUsage({
        prompt_tokens: 1_200,
        completion_tokens: 30,
        total_tokens: 1_230,
        prompt_tokens_details: { cached_tokens: 1_024 },
      }),
    ).toEqual({ promptTokens: 1_200, completionTokens: 30, totalTokens: 1_230, cachedTokens: 1_024 });
  });

  it('reads OpenRouter’s cache_write_tokens beside cached_tokens', () => {
    expect(
      toUsage({
        prompt_tokens: 10_339,
        completion_tokens: 60,
        total_tokens: 10_399,
        prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 10_318 },
      }),
    ).toMatchObject({ promptTokens: 10_339, cachedTokens: 0, cacheWriteTokens: 10_318 });
  });

  it('reads Anthropic-style cache_read_input_tokens and cache_creation_input_tokens', () => {
    const cacheFields = { cache_read_input_tokens: 4_000, cache_creation_input_tokens: 900 };
    const usage = {
      promptTokens: 5_000,
      completionTokens: 10,
      totalTokens: 5_010,
      cachedTokens: 4_000,
      cacheWriteTokens: 900,
    };
    // A router that counts them inside prompt_tokens (LiteLLM does).
    expect(
      toUsage({ prompt_tokens: 5_000, completion_tokens: 10, total_tokens: 5_010, ...cacheFields }),
    ).toEqual(usage);
    // An endpoint that counts only the uncached input in prompt_tokens (Anthropic's own way): added up.
    expect(toUsage({ prompt_tokens: 100, completion_tokens: 10, total_tokens: 110, ...cacheFields })).toEqual(
      usage,
    );
  });

  it('reads DeepSeek’s prompt_cache_hit_tokens', () => {
    expect(toUsage({ prompt_tokens: 300, completion_tokens: 5, prompt_cache_hit_tokens: 256 })).toMatchObject(
      {
        cachedTokens: 256,
        totalTokens: 305,
      },
    );
  });

  it('leaves cache fields out when absent or not counts, and gives undefined without token counts', () => {
    expect(toUsage({ prompt_tokens: 11, completion_tokens: 7 })).toEqual({
      promptTokens: 11,
      completionTokens: 7,
      totalTokens: 18,
    });
    expect(
      toUsage({
        prompt_tokens: 11,
        completion_tokens: 7,
        prompt_tokens_details: { cached_tokens: 'lots' },
        cache_read_input_tokens: -3,
      }),
    ).toEqual({ promptTokens: 11, completionTokens: 7, totalTokens: 18 });
    expect(toUsage({ prompt_tokens_details: null, completion_tokens: 2 })).toEqual({
      promptTokens: 0,
      completionTokens: 2,
      totalTokens: 2,
    });
    expect(toUsage({})).toBeUndefined();
    expect(toUsage(null)).toBeUndefined();
    expect(toUsage('usage')).toBeUndefined();
  });
});

describe('cache hints', () => {
  it('sends prompt_cache_key to OpenAI’s API only, cache_control for Claude models elsewhere, nothing when off', () => {
    const auto: Array<[string, string, { promptCacheKey: boolean; cacheControl: boolean }]> = [
      ['https://api.openai.com/v1', 'gpt-4o-mini', { promptCacheKey: true, cacheControl: false }],
      [
        'https://openrouter.ai/api/v1',
        'anthropic/claude-sonnet-4',
        { promptCacheKey: false, cacheControl: true },
      ],
      ['https://openrouter.ai/api/v1', 'openai/gpt-4o', { promptCacheKey: false, cacheControl: false }],
      ['http://127.0.0.1:11434/v1', 'llama3.1:8b', { promptCacheKey: false, cacheControl: false }],
    ];
    for (const [url, model, hints] of auto) expect(cacheHintsFor(url, model, 'auto')).toEqual(hints);
    expect(cacheHintsFor('http://127.0.0.1:4000/v1', 'claude-3-5-haiku-latest', 'auto').cacheControl).toBe(
      true,
    );
    // A look-alike host is not OpenAI's.
    expect(cacheHintsFor('https://api.openai.com.example.net/v1', 'gpt-4o', 'auto').promptCacheKey).toBe(
      false,
    );
    for (const [url, model] of [
      ['https://api.openai.com/v1', 'gpt-4o'],
      ['https://openrouter.ai/api/v1', 'anthropic/claude-sonnet-4'],
    ] as const) {
      expect(cacheHintsFor(url, model, 'off')).toEqual({ promptCacheKey: false, cacheControl: false });
    }
    expect(isClaudeModel('bedrock/anthropic.claude-3-haiku')).toBe(true);
    expect(isClaudeModel('gpt-4o')).toBe(false);
  });

  it('keys the cache by a hash of the session: stable, distinct per session, without the chat id', () => {
    const key = promptCacheKey('telegram:123456789');
    expect(key).toBe(promptCacheKey('telegram:123456789'));
    expect(key).not.toBe(promptCacheKey('telegram:123456780'));
    expect(key).not.toContain('123456789');
    expect(key).toMatch(/^magpie-[0-9a-f]{32}$/);
  });

  it('marks at most three breakpoints: the static system part, the last message and the last user message', () => {
    const marked = withCacheControl(
      [
        { role: 'system', content: 'STATIC|SESSION' },
        { role: 'user', content: 'question' },
        { role: 'assistant', content: null, tool_calls: [] },
        { role: 'tool', tool_call_id: 't1', content: 'result' },
      ],
      'STATIC'.length,
    );
    expect(marked[0]).toEqual({
      role: 'system',
      content: [
        { type: 'text', text: 'STATIC', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: '|SESSION' },
      ],
    });
    expect(marked[1]).toEqual({
      role: 'user',
      content: [{ type: 'text', text: 'question', cache_control: { type: 'ephemeral' } }],
    });
    expect(marked[3]).toEqual({
      role: 'tool',
      tool_call_id: 't1',
      content: [{ type: 'text', text: 'result', cache_control: { type: 'ephemeral' } }],
    });
    expect(JSON.stringify(marked).match(/cache_control/g)).toHaveLength(3);
  });
});

describe('OpenAIProvider and prompt caching (fake server)', () => {
  let fake: FakeOpenAI;
  const tools: ToolDefinition[] = [
    { name: 'read_file', description: 'Read a file', parameters: { type: 'object', properties: {} } },
  ];
  const messages: ChatMessage[] = [
    { role: 'system', content: 'STATIC PART\n\n---\n\nsession part', staticChars: 'STATIC PART'.length },
    { role: 'user', content: 'hello' },
  ];
  const provider = (model: string, promptCache?: 'auto' | 'off') =>
    new OpenAIProvider({
      apiKey: 'k',
      baseURL: fake.baseURL,
      model,
      maxRetries: 0,
      ...(promptCache ? { promptCache } : {}),
    });

  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });

  it('returns the cached tokens the endpoint reports', async () => {
    fake.enqueue({
      content: 'ok',
      usage: { prompt_tokens: 2_000, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 1_536 } },
    });
    const reply = await provider('gpt-4o-mini').chat({ messages });
    expect(reply.usage).toEqual({
      promptTokens: 2_000,
      completionTokens: 5,
      totalTokens: 2_005,
      cachedTokens: 1_536,
    });
  });

  it('puts the fields that never change first and the messages last, so a longer request extends the shorter', async () => {
    const p = provider('gpt-4o-mini');
    await p.chat({ messages, tools, cacheKey: 'cli:x', maxTokens: 50 });
    const again = await p.chat({
      messages: [...messages, { role: 'assistant', content: 'hi' }, { role: 'user', content: 'again' }],
      tools,
      cacheKey: 'cli:x',
      maxTokens: 50,
    });
    const [first, second] = fake.requests.map((r) => r.raw);
    expect(Object.keys(fake.requests[0]!.body).at(-1)).toBe('messages');
    expect(first!.indexOf('"tools"')).toBeLessThan(first!.indexOf('"messages"'));
    expect(second!.startsWith(first!.slice(0, first!.length - 2))).toBe(true);
    // The fake, like a provider, served that prefix from its cache.
    expect(again.usage?.cachedTokens).toBeGreaterThan(0);
    // A local server gets no prompt_cache_key (it may refuse unknown fields).
    expect(fake.requests[1]!.body.prompt_cache_key).toBeUndefined();
  });

  it('sends no cache hint to a local server for a non-Claude model', async () => {
    await provider('llama3.1:8b').chat({ messages, cacheKey: 'cli:x' });
    const body = fake.requests[0]!.body;
    expect(body.prompt_cache_key).toBeUndefined();
    expect(fake.requests[0]!.raw).not.toContain('cache_control');
    expect(body.messages[0]).toEqual({ role: 'system', content: messages[0]!.content });
  });

  it('marks cache_control breakpoints for a Claude model, and none with MAGPIE_PROMPT_CACHE=off', async () => {
    await provider('anthropic/claude-sonnet-4').chat({ messages, cacheKey: 'cli:x' });
    const body = fake.requests[0]!.body;
    expect(body.messages[0].content).toEqual([
      { type: 'text', text: 'STATIC PART', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: '\n\n---\n\nsession part' },
    ]);
    expect(body.messages[1].content).toEqual([
      { type: 'text', text: 'hello', cache_control: { type: 'ephemeral' } },
    ]);
    expect(body.prompt_cache_key).toBeUndefined();

    await provider('anthropic/claude-sonnet-4', 'off').chat({ messages, cacheKey: 'cli:x' });
    expect(fake.requests[1]!.raw).not.toContain('cache_control');
  });

  it('refuses an unknown promptCache mode', () => {
    expect(() => provider('gpt-4o', 'sometimes' as 'auto')).toThrow(/promptCache must be auto or off/);
  });
});
