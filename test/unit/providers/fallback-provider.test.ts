/**
 * FallbackProvider against local OpenAI-compatible servers that fail in each
 * way the issue names — a refused connection (a closed port), 503, 429 with
 * Retry-After, a hang, a quota body, an unknown model — with a healthy fake
 * as the fallback: the call is answered by the fallback within seconds; a
 * failed endpoint is left alone for its cool-down, then probed once; nothing
 * falls back after text was streamed, nor for the request's own fault; with
 * everything down, one line naming each model. Cool-downs in memory here; the
 * Redis store and two workers are in test/integration/providers.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppError, CancelledError } from '../../../src/errors/index.js';
import { MemoryCooldownStore } from '../../../src/providers/cooldown.js';
import { type FallbackModel, FallbackProvider } from '../../../src/providers/fallback.js';
import { ModelsUnavailableError, modelsDownApology } from '../../../src/providers/fallback-failures.js';
import { OpenAIProvider } from '../../../src/providers/openai/provider.js';
import type { ChatMessage } from '../../../src/providers/types.js';
import { closedPort } from '../../fakes/net.js';
import { type FakeOpenAI, type FakeReply, startFakeOpenAI } from '../../fakes/openai-server.js';
import { rejectedWith } from '../../fakes/rejection.js';
import { waitFor } from '../../fakes/wait-for.js';

const hi: ChatMessage[] = [{ role: 'user', content: 'hi' }];
let primary: FakeOpenAI;
let backup: FakeOpenAI;

beforeEach(async () => {
  [primary, backup] = await Promise.all([startFakeOpenAI(), startFakeOpenAI()]);
  backup.setResponder(() => ({ content: 'answered by the backup' }));
});
afterEach(async () => {
  await Promise.all([primary.close(), backup.close()]);
});

function model(
  id: string,
  baseURL: string,
  extra: Partial<FallbackModel> = {},
  timeoutMs = 2_000,
): FallbackModel {
  return {
    id,
    model: id,
    baseURL,
    vision: false,
    provider: new OpenAIProvider({
      apiKey: 'sk-fallback-test-key-0001',
      baseURL,
      model: id,
      timeoutMs,
      maxRetries: 2,
      retryBaseMs: 20,
    }),
    ...extra,
  };
}

function chain(first: FallbackModel, store = new MemoryCooldownStore(), baseMs = 30_000) {
  const provider = new FallbackProvider({
    models: [first, model('backup-model', backup.baseURL)],
    cooldowns: store,
    cooldown: { baseMs, maxMs: 10 * baseMs },
  });
  return { provider, store };
}

const failure = (promise: Promise<unknown>) => rejectedWith(AppError, promise);

describe('FallbackProvider: each way an endpoint fails', () => {
  const ways: Array<[string, FakeReply | 'refused', number]> = [
    ['a refused connection', 'refused', 0],
    [
      '503 (after its retries)',
      { status: 503, error: { message: 'upstream overloaded', type: 'server_error' } },
      3,
    ],
    [
      '429 with Retry-After: 30',
      { status: 429, error: { message: 'slow down' }, headers: { 'retry-after': '30' } },
      1,
    ],
    ['a hang', { content: 'too late', delayMs: 20_000 }, 1],
    [
      'a quota body',
      { status: 429, error: { message: 'You exceeded your current quota', code: 'insufficient_quota' } },
      1,
    ],
    [
      'an unknown model',
      { status: 404, error: { message: 'The model `m` does not exist', code: 'model_not_found' } },
      1,
    ],
  ];

  it.each(ways)(
    'is answered by the fallback after %s, within seconds',
    async (_name, way, primaryRequests) => {
      const baseURL = way === 'refused' ? `http://127.0.0.1:${await closedPort()}/v1` : primary.baseURL;
      if (way !== 'refused') primary.setResponder(() => way);
      const { provider } = chain(model('main-model', baseURL, {}, 500));
      const started = Date.now();
      const reply = await provider.chat({ messages: hi });
      expect(reply.content).toBe('answered by the backup');
      expect(reply.answeredBy).toEqual({ model: 'backup-model', fallbacks: 1 });
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(primary.requests).toHaveLength(primaryRequests);
      expect(backup.requests[0]?.body.model).toBe('backup-model');
    },
  );

  it('keeps a cool-down of at least the Retry-After', async () => {
    primary.setResponder(() => ({
      status: 429,
      error: { message: 'slow down' },
      headers: { 'retry-after': '45' },
    }));
    const { provider } = chain(model('main-model', primary.baseURL));
    await provider.chat({ messages: hi });
    const [main] = await provider.availability();
    expect(main?.cooling?.leftMs).toBeGreaterThan(40_000);
    expect(main?.cooling?.reason).toContain('429');
  });
});

describe('FallbackProvider: cool-downs', () => {
  it('leaves a failed model alone for its cool-down, probes it once after, and uses it again once it answers', async () => {
    let down = true;
    primary.setResponder(() =>
      down ? { status: 503, error: { message: 'down' } } : { content: 'main is back' },
    );
    const main = model('main-model', primary.baseURL);
    const { provider } = chain(
      {
        ...main,
        provider: new OpenAIProvider({
          apiKey: 'k',
          baseURL: primary.baseURL,
          model: 'main-model',
          maxRetries: 0,
        }),
      },
      undefined,
      // Long enough that a loaded machine does not see a cool-down run out between two steps.
      1_000,
    );
    for (let turn = 0; turn < 4; turn++) {
      expect((await provider.chat({ messages: hi })).answeredBy?.model).toBe('backup-model');
    }
    expect(primary.requests).toHaveLength(1);
    expect((await provider.nextModel()).id).toBe('backup-model');
    await waitFor(
      async () => (await provider.nextModel()).id === 'main-model',
      5_000,
      'the cool-down to end',
    );
    // Still down: one probe, then a doubled cool-down.
    await provider.chat({ messages: hi });
    expect(primary.requests).toHaveLength(2);
    const [afterProbe] = await provider.availability();
    expect(afterProbe?.cooling?.failures).toBe(2);
    expect(afterProbe?.cooling?.leftMs).toBeGreaterThan(1_000);
    await provider.chat({ messages: hi });
    expect(primary.requests).toHaveLength(2);
    down = false;
    await waitFor(
      async () => (await provider.nextModel()).id === 'main-model',
      5_000,
      'the second cool-down',
    );
    expect((await provider.chat({ messages: hi })).answeredBy).toEqual({ model: 'main-model', fallbacks: 0 });
    expect((await provider.chat({ messages: hi })).answeredBy?.model).toBe('main-model');
    expect((await provider.availability())[0]?.cooling).toBeUndefined();
  });

  it('benches every model of an endpoint it cannot reach', async () => {
    const dead = `http://127.0.0.1:${await closedPort()}/v1`;
    const store = new MemoryCooldownStore();
    const provider = new FallbackProvider({
      models: [model('a', dead), model('b', dead), model('backup-model', backup.baseURL)],
      cooldowns: store,
    });
    expect((await provider.chat({ messages: hi })).answeredBy).toEqual({
      model: 'backup-model',
      fallbacks: 2,
    });
    const entries = await store.list();
    expect(entries.map((e) => e.label)).toEqual([`${dead} (every model there)`]);
    expect((await provider.chat({ messages: hi })).answeredBy?.fallbacks).toBe(2);
  });

  it('uses no cool-down with a single model: each call tries it, and its own error comes back', async () => {
    const dead = `http://127.0.0.1:${await closedPort()}/v1`;
    const store = new MemoryCooldownStore();
    const provider = new FallbackProvider({ models: [model('only', dead)], cooldowns: store });
    for (let i = 0; i < 2; i++) {
      const err = await failure(provider.chat({ messages: hi }));
      expect(err.code).toBe('PROVIDER_UNREACHABLE');
      expect(err).not.toBeInstanceOf(ModelsUnavailableError);
    }
    expect(await store.list()).toEqual([]);
  });
});

/** A stream that sends the text "Hel", then an error event with `message`. */
function helThenError(message: string): FakeReply {
  const chunk = {
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 0,
    model: 'm',
    choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }],
  };
  return { raw: `data: ${JSON.stringify(chunk)}\n\ndata: ${JSON.stringify({ error: { message } })}\n\n` };
}

describe('FallbackProvider: what does not fall back', () => {
  it('never falls back after text was streamed to the user', async () => {
    primary.setResponder(() => helThenError('overloaded mid-answer'));
    const { provider } = chain(model('main-model', primary.baseURL));
    const deltas: string[] = [];
    const err = await failure(provider.chat({ messages: hi, onDelta: (t) => deltas.push(t) }));
    expect(err.code).toBe('PROVIDER_SERVER');
    expect(deltas.join('')).toBe('Hel');
    expect(backup.requests).toHaveLength(0);
    expect(primary.requests).toHaveLength(1);
  });

  it('does fall back when the broken text was never shown (no onDelta)', async () => {
    primary.setResponder(() => helThenError('overloaded'));
    const { provider } = chain(model('main-model', primary.baseURL));
    expect((await provider.chat({ messages: hi })).content).toBe('answered by the backup');
  });

  it('stops at a 400 that is the request’s fault, and at the first model’s context-length error', async () => {
    const { provider } = chain(model('main-model', primary.baseURL));
    primary.enqueue({ status: 400, error: { message: "Invalid value for 'temperature'" } });
    expect((await failure(provider.chat({ messages: hi }))).code).toBe('PROVIDER_BAD_REQUEST');
    primary.enqueue({ status: 400, error: { message: 'too long', code: 'context_length_exceeded' } });
    expect((await failure(provider.chat({ messages: hi }))).code).toBe('CONTEXT_LENGTH_EXCEEDED');
    expect(backup.requests).toHaveLength(0);
    expect((await provider.nextModel()).id).toBe('main-model');
  });

  it('moves past a later model too small for the conversation, and asks for compaction when none fits', async () => {
    const third = await startFakeOpenAI();
    try {
      primary.setResponder(() => ({ status: 503, error: { message: 'down' } }));
      backup.setResponder(() => ({
        status: 400,
        error: {
          message: "This model's maximum context length is 8192 tokens",
          code: 'context_length_exceeded',
        },
      }));
      third.setResponder(() => ({ content: 'the big one' }));
      const models = [
        model('main-model', primary.baseURL),
        model('backup-model', backup.baseURL),
        model('big', third.baseURL),
      ];
      const provider = new FallbackProvider({ models, cooldowns: new MemoryCooldownStore() });
      expect((await provider.chat({ messages: hi })).answeredBy).toEqual({ model: 'big', fallbacks: 2 });
      third.setResponder(() => ({ status: 503, error: { message: 'down too' } }));
      const provider2 = new FallbackProvider({ models, cooldowns: new MemoryCooldownStore() });
      expect((await failure(provider2.chat({ messages: hi }))).code).toBe('CONTEXT_LENGTH_EXCEEDED');
    } finally {
      await third.close();
    }
  });

  it('stops at once when cancelled, and leaves the other models untouched', async () => {
    primary.setResponder(() => ({ content: 'slow', delayMs: 10_000 }));
    const { provider } = chain(model('main-model', primary.baseURL, {}, 20_000));
    const controller = new AbortController();
    const call = provider.chat({ messages: hi, signal: controller.signal });
    await primary.waitForRequests(1);
    controller.abort();
    expect(await failure(call)).toBeInstanceOf(CancelledError);
    expect(backup.requests).toHaveLength(0);
    expect((await provider.availability())[0]?.cooling).toBeUndefined();
  });
});

describe('FallbackProvider: everything down', () => {
  it('fails with one line naming each model, its endpoint and its failure; then at once while they rest', async () => {
    const dead = `http://127.0.0.1:${await closedPort()}/v1`;
    backup.setResponder(() => ({
      status: 503,
      error: { message: 'backup overloaded sk-fallback-test-key-0001' },
    }));
    const { provider } = chain(model('main-model', dead));
    const err = await failure(provider.chat({ messages: hi }));
    expect(err).toBeInstanceOf(ModelsUnavailableError);
    expect(err.code).toBe('MODELS_UNAVAILABLE');
    expect(err.exitCode).toBe(3);
    expect(err.transient).toBe(true);
    expect(err.message).not.toContain('\n');
    expect(err.message).toMatch(
      /^all 2 models failed: main-model at http:\/\/127\.0\.0\.1:\d+\/v1: cannot reach .*ECONNREFUSED.*; backup-model at http:\/\/127\.0\.0\.1:\d+\/v1: the model endpoint failed \(503\)/,
    );
    expect(err.message).not.toContain('sk-fallback-test-key-0001');
    expect(modelsDownApology(err as ModelsUnavailableError)).toBe(
      'Sorry, none of my models is answering right now (main-model: unreachable; backup-model: server error 503). Please try again in a few minutes.',
    );
    const requests = backup.requests.length;
    const started = Date.now();
    const again = await failure(provider.chat({ messages: hi }));
    expect(Date.now() - started).toBeLessThan(200);
    expect(backup.requests).toHaveLength(requests);
    expect(again.message).toMatch(/main-model at .*: resting \d+s more after failing \(cannot reach/);
  });
});

describe('FallbackProvider: the chat’s model and the model’s abilities', () => {
  it('tries the chat’s model first, then the others in order; a name it does not know goes to the default endpoint', async () => {
    const { provider } = chain(model('main-model', primary.baseURL));
    expect((await provider.chat({ messages: hi, model: 'backup-model' })).answeredBy).toEqual({
      model: 'backup-model',
      fallbacks: 0,
    });
    expect(primary.requests).toHaveLength(0);
    backup.setResponder(() => ({ status: 503, error: { message: 'down' } }));
    expect((await provider.chat({ messages: hi, model: 'backup-model' })).answeredBy).toEqual({
      model: 'main-model',
      fallbacks: 1,
    });
    await provider.chat({ messages: hi, model: 'gpt-ad-hoc' });
    expect(primary.requests.at(-1)?.body.model).toBe('gpt-ad-hoc');
  });

  it('replaces images by a note for a fallback that takes none, and keeps them for one that does or a model alone', async () => {
    const photo: ChatMessage[] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is this?' },
          { type: 'image', url: 'data:image/png;base64,AAAA' },
        ],
      },
    ];
    primary.setResponder(() => ({ status: 503, error: { message: 'down' } }));
    const seeing = new FallbackProvider({
      models: [model('main-model', primary.baseURL), model('backup-model', backup.baseURL, { vision: true })],
      cooldowns: new MemoryCooldownStore(),
    });
    await seeing.chat({ messages: photo });
    expect(JSON.stringify(backup.requests.at(-1)?.body.messages)).toContain('image_url');
    const { provider } = chain(model('main-model', primary.baseURL));
    await provider.chat({ messages: photo });
    expect(backup.requests.at(-1)?.body.messages[0].content).toBe(
      'what is this?\n[image not shown: backup-model does not take images]',
    );
    // A model configured alone gets the images as sent, as before fallbacks existed.
    const alone = new FallbackProvider({
      models: [model('backup-model', backup.baseURL)],
      cooldowns: new MemoryCooldownStore(),
    });
    await alone.chat({ messages: photo });
    expect(JSON.stringify(backup.requests.at(-1)?.body.messages)).toContain('image_url');
  });

  it('checks its options', () => {
    const one = model('x', backup.baseURL);
    expect(() => new FallbackProvider({ models: [], cooldowns: new MemoryCooldownStore() })).toThrow(
      /at least one model/,
    );
    expect(() => new FallbackProvider({ models: [one, one], cooldowns: new MemoryCooldownStore() })).toThrow(
      /unique/,
    );
    expect(
      () =>
        new FallbackProvider({
          models: [one],
          cooldowns: new MemoryCooldownStore(),
          cooldown: { baseMs: 0 },
        }),
    ).toThrow(/cool-down must be above 0/);
  });
});
