/** OpenAIProvider against the fake OpenAI server (a real HTTP server), no mocks. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppError, CancelledError, ProviderError } from '../../../src/errors/index.js';
import type { OpenAIProviderOptions } from '../../../src/providers/openai/provider.js';
import type { ChatMessage } from '../../../src/providers/types.js';
import { closedPort } from '../../fakes/net.js';
import { providerFor } from '../../fakes/openai-provider.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../fakes/openai-server.js';
import { rejectedWith } from '../../fakes/rejection.js';

const hi: ChatMessage[] = [{ role: 'user', content: 'hi' }];
let fake: FakeOpenAI;

beforeEach(async () => {
  fake = await startFakeOpenAI({ models: ['model-a', 'model-b'], transcript: 'hello from audio' });
});
afterEach(async () => {
  await fake.close();
});

const provider = (options: Partial<OpenAIProviderOptions> = {}) => providerFor(fake, options);

const failure = (promise: Promise<unknown>) => rejectedWith(AppError, promise);

describe('OpenAIProvider: streaming', () => {
  it('streams text in several deltas and returns the whole text', async () => {
    fake.enqueue({ content: 'The cat is called Miso.' });
    const deltas: string[] = [];
    const reply = await provider().chat({ messages: hi, onDelta: (t) => deltas.push(t) });
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('The cat is called Miso.');
    expect(reply.content).toBe('The cat is called Miso.');
    expect(reply.toolCalls).toEqual([]);
    expect(reply.finishReason).toBe('stop');
    expect(fake.requests[0]?.body.stream).toBe(true);
    expect(fake.requests[0]?.body.model).toBe('test-model');
  });

  it('accumulates two tool calls split across chunks with interleaved indexes', async () => {
    fake.enqueue({
      content: '',
      toolCalls: [
        { id: 'call_a', name: 'write_file', arguments: '{"path":"notes.md","content":"cat: Miso"}' },
        { id: 'call_b', name: 'read_file', arguments: '{"path":"MEMORY.md"}' },
      ],
    });
    const reply = await provider().chat({ messages: hi });
    expect(reply.content).toBe('');
    expect(reply.finishReason).toBe('tool_calls');
    expect(reply.toolCalls).toEqual([
      { id: 'call_a', name: 'write_file', arguments: '{"path":"notes.md","content":"cat: Miso"}' },
      { id: 'call_b', name: 'read_file', arguments: '{"path":"MEMORY.md"}' },
    ]);
  });

  it('tolerates chunks without type, role, finish_reason or tool-call id', async () => {
    fake.enqueue({
      content: 'calling',
      toolCalls: [{ id: '', name: 'list_dir', arguments: '{"path":"."}' }],
      omitOptionalFields: true,
    });
    const reply = await provider().chat({ messages: hi });
    expect(reply.content).toBe('calling');
    expect(reply.toolCalls).toHaveLength(1);
    expect(reply.toolCalls[0]?.name).toBe('list_dir');
    expect(reply.toolCalls[0]?.arguments).toBe('{"path":"."}');
    expect(reply.toolCalls[0]?.id).toMatch(/^call_.+/);
    expect(reply.finishReason).toBe('tool_calls');
  });

  it('records usage from the final chunk it asked for', async () => {
    fake.enqueue({ content: 'ok', usage: { prompt_tokens: 11, completion_tokens: 7 } });
    const reply = await provider().chat({ messages: hi });
    expect(fake.requests[0]?.body.stream_options).toEqual({ include_usage: true });
    expect(reply.usage).toEqual({ promptTokens: 11, completionTokens: 7, totalTokens: 18 });
  });

  it('keeps reasoning out of the content and the deltas', async () => {
    fake.enqueue({ reasoning: 'secret chain of thought', content: 'the answer' });
    const deltas: string[] = [];
    const reply = await provider().chat({ messages: hi, onDelta: (t) => deltas.push(t) });
    expect(reply.content).toBe('the answer');
    expect(deltas.join('')).toBe('the answer');
  });
});

describe('OpenAIProvider: request shape', () => {
  it('omits tools when the list is empty and sends them when given', async () => {
    const p = provider();
    await p.chat({ messages: hi, tools: [] });
    expect(fake.requests[0]?.body).not.toHaveProperty('tools');
    await p.chat({
      messages: hi,
      tools: [{ name: 'exec', description: 'run a command', parameters: { type: 'object', properties: {} } }],
    });
    expect(fake.requests[1]?.body.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'exec',
          description: 'run a command',
          parameters: { type: 'object', properties: {} },
        },
      },
    ]);
  });

  it('maps our messages to API shapes and sends no reasoning fields back', async () => {
    const assistant = {
      role: 'assistant',
      content: null,
      toolCalls: [{ id: 'call_1', name: 'read_file', arguments: '{"path":"a"}' }],
      reasoning_content: 'old thoughts',
      reasoning: 'old thoughts',
    } as ChatMessage;
    await provider().chat({
      messages: [
        { role: 'system', content: 'be brief' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image', url: 'data:image/png;base64,AAAA', mimeType: 'image/png' },
          ],
        },
        assistant,
        { role: 'tool', toolCallId: 'call_1', name: 'read_file', content: 'file text' },
      ],
      maxTokens: 50,
      temperature: 0.2,
    });
    const body = fake.requests[0]?.body;
    expect(body.messages).toEqual([
      { role: 'system', content: 'be brief' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is this?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'file text' },
    ]);
    expect(JSON.stringify(body)).not.toContain('old thoughts');
    expect(body.max_tokens).toBe(50);
    expect(body.temperature).toBe(0.2);
  });
});

describe('OpenAIProvider: errors and retries', () => {
  it('maps a refused key to PROVIDER_AUTH without retrying', async () => {
    await fake.close();
    fake = await startFakeOpenAI({ apiKey: 'sk-right-key' });
    const err = await failure(provider({ apiKey: 'sk-wrong-key', maxRetries: 2 }).chat({ messages: hi }));
    expect(err).toBeInstanceOf(ProviderError);
    expect(err.code).toBe('PROVIDER_AUTH');
    expect(err.transient).toBe(false);
    expect(err.message).toBe('the API key was refused (401): check OPENAI_API_KEY');
    expect(fake.requests).toHaveLength(1);
  });

  it('retries two 500s and succeeds on the third request', async () => {
    fake.enqueue({ status: 500 }, { status: 500 }, { content: 'finally' });
    const reply = await provider({ maxRetries: 2 }).chat({ messages: hi });
    expect(reply.content).toBe('finally');
    expect(fake.requests).toHaveLength(3);
  });

  it('gives up on a 500 storm with a transient PROVIDER_SERVER', async () => {
    fake.setResponder(() => ({ status: 500, error: { message: 'upstream exploded', type: 'server_error' } }));
    const err = await failure(provider({ maxRetries: 2 }).chat({ messages: hi }));
    expect(err.code).toBe('PROVIDER_SERVER');
    expect(err.transient).toBe(true);
    expect(err.message).toContain('upstream exploded');
    expect(err.message).not.toContain('\n');
    expect(fake.requests).toHaveLength(3);
  });

  it('retries a 429 as PROVIDER_RATE_LIMITED', async () => {
    fake.setResponder(() => ({ status: 429, error: { message: 'slow down', type: 'rate_limit_error' } }));
    const err = await failure(provider({ maxRetries: 1 }).chat({ messages: hi }));
    expect(err.code).toBe('PROVIDER_RATE_LIMITED');
    expect(err.transient).toBe(true);
    expect(fake.requests).toHaveLength(2);
  });

  it.each([
    { status: 403, code: 'PROVIDER_AUTH', transient: false },
    { status: 408, code: 'PROVIDER_UNREACHABLE', transient: true },
    { status: 409, code: 'PROVIDER_SERVER', transient: true },
    { status: 422, code: 'PROVIDER_BAD_REQUEST', transient: false },
    { status: 503, code: 'PROVIDER_SERVER', transient: true },
  ])('maps status $status to $code (transient: $transient)', async ({ status, code, transient }) => {
    fake.enqueue({ status, error: { message: `status ${status}` } });
    const err = await failure(provider({ maxRetries: 0 }).chat({ messages: hi }));
    expect(err.code).toBe(code);
    expect(err.transient).toBe(transient);
    expect((err as ProviderError).status).toBe(status);
  });

  it('does not retry a 429 that means the quota is spent', async () => {
    fake.setResponder(() => ({ status: 429, error: { message: 'quota', code: 'insufficient_quota' } }));
    const err = await failure(provider({ maxRetries: 2 }).chat({ messages: hi }));
    expect(err.code).toBe('PROVIDER_MODEL_UNAVAILABLE');
    expect(err.transient).toBe(false);
    expect(fake.requests).toHaveLength(1);
  });

  it('maps an unreachable endpoint to PROVIDER_UNREACHABLE naming OPENAI_BASE_URL', async () => {
    const port = await closedPort();
    const err = await failure(
      provider({ baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 1 }).chat({ messages: hi }),
    );
    expect(err.code).toBe('PROVIDER_UNREACHABLE');
    expect(err.transient).toBe(true);
    expect(err.message).toContain('OPENAI_BASE_URL');
    expect(err.message).toContain('ECONNREFUSED');
  });

  it('times out a stream that goes silent', async () => {
    fake.enqueue({ content: 'too late', delayMs: 5_000 });
    const started = Date.now();
    const err = await failure(provider({ timeoutMs: 200, maxRetries: 0 }).chat({ messages: hi }));
    expect(err.code).toBe('PROVIDER_UNREACHABLE');
    expect(err.message).toContain('MAGPIE_LLM_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('maps context_length_exceeded to CONTEXT_LENGTH_EXCEEDED without retrying', async () => {
    fake.enqueue({
      status: 400,
      error: { message: 'too long', code: 'context_length_exceeded', type: 'invalid_request_error' },
    });
    const err = await failure(provider().chat({ messages: hi }));
    expect(err.code).toBe('CONTEXT_LENGTH_EXCEEDED');
    expect(fake.requests).toHaveLength(1);
  });

  it('recognises a context-length 400 from a server that sends no code', async () => {
    fake.enqueue({
      status: 400,
      error: {
        message: "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.",
      },
    });
    const err = await failure(provider().chat({ messages: hi }));
    expect(err.code).toBe('CONTEXT_LENGTH_EXCEEDED');
  });

  it('maps another 400 to PROVIDER_BAD_REQUEST without retrying', async () => {
    fake.enqueue({ status: 400, error: { message: 'unknown parameter: foo' } });
    const err = await failure(provider({ maxRetries: 2 }).chat({ messages: hi }));
    expect(err.code).toBe('PROVIDER_BAD_REQUEST');
    expect(err.message).toContain('unknown parameter: foo');
    expect(fake.requests).toHaveLength(1);
  });

  it('maps an unparsable stream to PROVIDER_BAD_RESPONSE', async () => {
    fake.enqueue({ raw: 'data: {this is not json\n\n' });
    const err = await failure(provider().chat({ messages: hi }));
    expect(err.code).toBe('PROVIDER_BAD_RESPONSE');
  });

  it('maps a stream without any completion to PROVIDER_BAD_RESPONSE', async () => {
    fake.enqueue({ raw: '<html>bad gateway page</html>' });
    const err = await failure(provider().chat({ messages: hi }));
    expect(err.code).toBe('PROVIDER_BAD_RESPONSE');
  });

  it('does not retry once text has reached the user', async () => {
    const chunk = { id: 'x', object: 'chat.completion.chunk', created: 0, model: 'm' };
    fake.enqueue({
      raw:
        `data: ${JSON.stringify({ ...chunk, choices: [{ index: 0, delta: { content: 'half an ans' } }] })}\n\n` +
        `data: ${JSON.stringify({ error: { message: 'overloaded mid-stream' } })}\n\n`,
    });
    const deltas: string[] = [];
    const err = await failure(
      provider({ maxRetries: 2 }).chat({ messages: hi, onDelta: (t) => deltas.push(t) }),
    );
    expect(err.code).toBe('PROVIDER_SERVER');
    expect(deltas.join('')).toBe('half an ans');
    expect(fake.requests).toHaveLength(1);
  });
});

describe('OpenAIProvider: empty completions', () => {
  const chunk = { id: 'x', object: 'chat.completion.chunk', created: 0, model: 'm' };
  const usageOnly =
    `data: ${JSON.stringify({ ...chunk, choices: [], usage: { prompt_tokens: 3, completion_tokens: 0, total_tokens: 3 } })}\n\n` +
    'data: [DONE]\n\n';

  it('an SSE stream with no choices is a transient PROVIDER_EMPTY_RESPONSE, retried', async () => {
    fake.enqueue({ raw: usageOnly }, { raw: usageOnly });
    const err = await failure(provider({ maxRetries: 1 }).chat({ messages: hi }));
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ code: 'PROVIDER_EMPTY_RESPONSE', transient: true, exitCode: 1 });
    expect(err.message).toBe('the model sent an empty answer (the completion carried no choices)');
    expect(fake.requests).toHaveLength(2);
  });

  it('empty content with no tool calls is PROVIDER_EMPTY_RESPONSE naming the finish reason', async () => {
    fake.enqueue({ content: '' });
    const err = await failure(provider({ maxRetries: 0 }).chat({ messages: hi }));
    expect(err.code).toBe('PROVIDER_EMPTY_RESPONSE');
    expect(err.message).toBe(
      'the model sent an empty answer (no text and no tool calls, finish_reason stop)',
    );
  });

  it('whitespace only counts as empty; a retry that answers succeeds', async () => {
    fake.enqueue({ content: ' \n ' }, { content: 'here now' });
    const reply = await provider({ maxRetries: 1 }).chat({ messages: hi });
    expect(reply.content).toBe('here now');
    expect(fake.requests).toHaveLength(2);
  });

  it('allowEmpty accepts an empty answer but never a choice-less stream', async () => {
    fake.enqueue({ content: '' }, { raw: usageOnly });
    const reply = await provider({ maxRetries: 0 }).chat({ messages: hi, allowEmpty: true });
    expect(reply).toMatchObject({ content: '', toolCalls: [], finishReason: 'stop' });
    const err = await failure(provider({ maxRetries: 0 }).chat({ messages: hi, allowEmpty: true }));
    expect(err.code).toBe('PROVIDER_EMPTY_RESPONSE');
  });

  it('a tool call with no text is an answer', async () => {
    fake.enqueue({ toolCalls: [{ name: 'echo', arguments: '{}' }] });
    const reply = await provider({ maxRetries: 0 }).chat({ messages: hi });
    expect(reply.toolCalls).toHaveLength(1);
  });
});

describe('OpenAIProvider: cancellation', () => {
  it('rejects with CancelledError quickly when aborted mid-stream', async () => {
    const controller = new AbortController();
    fake.setResponder(() => {
      setImmediate(() => controller.abort());
      return { content: 'never seen', delayMs: 10_000 };
    });
    const deltas: string[] = [];
    const started = Date.now();
    const err = await failure(
      provider({ maxRetries: 2 }).chat({
        messages: hi,
        signal: controller.signal,
        onDelta: (t) => deltas.push(t),
      }),
    );
    expect(err).toBeInstanceOf(CancelledError);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(deltas).toEqual([]);
    expect(fake.requests).toHaveLength(1);
  });

  it('sends nothing when the signal is already aborted', async () => {
    const err = await failure(provider().chat({ messages: hi, signal: AbortSignal.abort() }));
    expect(err).toBeInstanceOf(CancelledError);
    expect(fake.requests).toHaveLength(0);
  });
});

describe('OpenAIProvider: models and transcription', () => {
  it('lists the endpoint models', async () => {
    expect(await provider().listModels()).toEqual(['model-a', 'model-b']);
  });

  it('transcribes audio through /audio/transcriptions', async () => {
    const bytes = new Uint8Array([0x4f, 0x67, 0x67, 0x53, 1, 2, 3]);
    const audio = { bytes, fileName: 'voice.ogg', mimeType: 'audio/ogg' };
    expect(await provider().transcribe(audio)).toBe('hello from audio');
  });

  it('maps a refused key on listModels to PROVIDER_AUTH', async () => {
    await fake.close();
    fake = await startFakeOpenAI({ apiKey: 'sk-right-key' });
    const err = await failure(provider({ apiKey: 'sk-wrong-key' }).listModels());
    expect(err.code).toBe('PROVIDER_AUTH');
  });
});
