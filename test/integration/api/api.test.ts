/**
 * The OpenAI-compatible API through the real stack (the `openai` client or
 * raw HTTP → API channel → bus → worker → fake OpenAI): answers streamed and
 * whole with the model's usage, the refusals in OpenAI's error shape (401,
 * 404, 400, 413, 429), a client leaving mid-stream stopping the turn,
 * sessions kept apart and remembered without the resent history, a retried
 * request answered once, images reaching the model and a private image URL
 * refused, and a port that serves nothing else.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { AppError, ExitCode } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { roleConfig } from '../../fakes/config.js';
import { closedPort } from '../../fakes/net.js';
import {
  type FakeOpenAI,
  lastUserText,
  type RecordedRequest,
  startFakeOpenAI,
} from '../../fakes/openai-server.js';
import { stopRoleAndFakes } from '../../fakes/role.js';

const KEY = 'phone-key-0123456789abcdefghijkl';
const OTHER = 'other-key-0123456789abcdefghijkl';
/** 1x1 transparent PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

/** Answers held under `hold:<key>` until released; everything else echoed, with fixed usage. */
class Gates {
  readonly #gates = new Map<
    string,
    { reached: () => void; reachedP: Promise<void>; open: () => void; openP: Promise<void> }
  >();

  gate(key: string) {
    let g = this.#gates.get(key);
    if (!g) {
      let reached!: () => void;
      let open!: () => void;
      const reachedP = new Promise<void>((r) => {
        reached = r;
      });
      const openP = new Promise<void>((r) => {
        open = r;
      });
      g = { reached, reachedP, open, openP };
      this.#gates.set(key, g);
    }
    return g;
  }

  releaseAll(): void {
    for (const g of this.#gates.values()) g.open();
  }
}

describe('the OpenAI-compatible API', () => {
  let openai: FakeOpenAI;
  let role: RunningRole | undefined;
  let workspace: string;
  let base: string;
  let client: OpenAI;
  const gates = new Gates();

  const responder = async (req: RecordedRequest) => {
    const text = lastUserText(req);
    const hold = /hold:([\w-]+)/.exec(text)?.[1];
    if (hold) {
      const gate = gates.gate(hold);
      gate.reached();
      await gate.openP;
      return { content: `held ${hold} done`, usage: { prompt_tokens: 10, completion_tokens: 3 } };
    }
    if (text.includes('slowly please'))
      return { content: 'One. Two. Three. Four. Five. Six.', pieces: 6, pieceDelayMs: 150 };
    return { content: `echo: ${text.slice(-80)}`, usage: { prompt_tokens: 123, completion_tokens: 45 } };
  };

  /** The model's requests whose last user message contains `marker`. */
  const modelSaw = (marker: string) => openai.requests.filter((r) => lastUserText(r).includes(marker));

  const post = (
    body: unknown,
    headers: Record<string, string | undefined> = { authorization: `Bearer ${KEY}` },
  ) =>
    fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: Object.fromEntries(
        Object.entries({ 'content-type': 'application/json', ...headers }).filter(
          (e): e is [string, string] => e[1] !== undefined,
        ),
      ),
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  const say = (content: string) => ({ model: 'main', messages: [{ role: 'user' as const, content }] });

  beforeAll(async () => {
    openai = await startFakeOpenAI({ responder });
    workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-api-'));
    const port = await closedPort();
    base = `http://127.0.0.1:${port}`;
    const config = roleConfig(
      { workspace, openai, prefix: `test-${randomUUID()}` },
      {
        MAGPIE_API_PORT: String(port),
        MAGPIE_API_KEYS: `${KEY}:phone, ${OTHER}:other`,
        MAGPIE_API_MAX_BODY: '64KiB',
        MAGPIE_API_CONCURRENCY: '2',
      },
    );
    role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 4 });
    client = new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY, maxRetries: 0 });
  });

  afterAll(async () => {
    gates.releaseAll();
    await stopRoleAndFakes(role, [openai], workspace);
  });

  it('answers a request whole, with the usage the model reported', async () => {
    const answer = await client.chat.completions.create({ ...say('whole please'), user: 'whole' } as never);
    const completion = answer as OpenAI.Chat.ChatCompletion;
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0]?.message.content).toBe('echo: whole please');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({ prompt_tokens: 123, completion_tokens: 45, total_tokens: 168 });
    expect(completion.model).toBe('main');
  });

  it('streams an answer as it is written, ending with the usage and [DONE]', async () => {
    const stream = await client.chat.completions.create({
      ...say('slowly please'),
      user: 'stream',
      stream: true,
      stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta?.content;
      if (delta) pieces.push(delta);
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(pieces.join('')).toBe('One. Two. Three. Four. Five. Six.');
    // Written as the model wrote it, not in one piece at the end.
    expect(pieces.length).toBeGreaterThan(1);
    expect(finish).toBe('stop');
    expect(usage?.completion_tokens).toBeGreaterThan(0);
  });

  it('refuses a missing, wrong or near-miss key with 401 in OpenAI shape, and the model hears nothing', async () => {
    const before = openai.requests.length;
    for (const headers of [
      {},
      { authorization: 'Bearer wrong-key-0123456789abcdefghijk' },
      { authorization: `Bearer ${KEY}x` },
      { authorization: `Bearer ${KEY.slice(0, -1)}` },
      { authorization: `Basic ${Buffer.from(`x:${KEY}`).toString('base64')}` },
      { authorization: KEY },
    ]) {
      const res = await post(say('let me in'), headers);
      expect(res.status, JSON.stringify(headers)).toBe(401);
      const body = (await res.json()) as { error: { type: string; code: string; message: string } };
      expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key' });
      expect(body.error.message).not.toContain(KEY);
    }
    const models = await fetch(`${base}/v1/models`);
    expect(models.status).toBe(401);
    expect(openai.requests.length).toBe(before);
    await expect(
      new OpenAI({
        baseURL: `${base}/v1`,
        apiKey: 'nope-nope-nope-nope-nope-nope',
        maxRetries: 0,
      }).models.list(),
    ).rejects.toMatchObject({ status: 401 });
  });

  it('lists the agents as models and answers an unknown model with 404', async () => {
    const list = await client.models.list();
    expect(list.data.map((m) => m.id)).toEqual(['main']);
    await expect(client.chat.completions.create({ ...say('hi'), model: 'gpt-4o' })).rejects.toMatchObject({
      status: 404,
      code: 'model_not_found',
    });
  });

  it("refuses the client's own tools, a last message that is not the user's, and bad JSON with 400", async () => {
    const before = openai.requests.length;
    await expect(
      client.chat.completions.create({
        ...say('use my tool'),
        tools: [{ type: 'function', function: { name: 'lights', parameters: { type: 'object' } } }],
      }),
    ).rejects.toMatchObject({ status: 400, param: 'tools' });
    const assistantLast = await post({
      model: 'main',
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
      ],
    });
    expect(assistantLast.status).toBe(400);
    expect(((await assistantLast.json()) as { error: { message: string } }).error.message).toMatch(
      /last message must be the user's/,
    );
    const notJson = await post('{"model": "main", "messages": [');
    expect(notJson.status).toBe(400);
    const audio = await post({
      model: 'main',
      messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }],
    });
    expect(audio.status).toBe(400);
    expect(openai.requests.length).toBe(before);
  });

  it('refuses a body over MAGPIE_API_MAX_BODY with 413', async () => {
    const res = await post(say('x'.repeat(70 * 1024)));
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
      'MAGPIE_API_MAX_BODY',
    );
  });

  it('serves nothing but the API on its port', async () => {
    for (const where of ['/', '/chat', '/dashboard', '/metrics', '/v1/completions', '/v1/chat/completions']) {
      const res = await fetch(`${base}${where}`, { headers: { authorization: `Bearer ${KEY}` } });
      expect(res.status, where).toBe(404);
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
    }
  });

  it('caps the requests one key runs at once with 429; another key is not held back', async () => {
    const first = client.chat.completions.create({ ...say('one hold:busy-1'), user: 'busy-1' });
    const second = client.chat.completions.create({ ...say('two hold:busy-2'), user: 'busy-2' });
    await gates.gate('busy-1').reachedP;
    await gates.gate('busy-2').reachedP;
    await expect(client.chat.completions.create({ ...say('three'), user: 'busy-3' })).rejects.toMatchObject({
      status: 429,
    });
    const other = new OpenAI({ baseURL: `${base}/v1`, apiKey: OTHER, maxRetries: 0 });
    const answer = await other.chat.completions.create(say('from the other key'));
    expect(answer.choices[0]?.message.content).toBe('echo: from the other key');
    gates.gate('busy-1').open();
    gates.gate('busy-2').open();
    expect((await first).choices[0]?.message.content).toBe('held busy-1 done');
    expect((await second).choices[0]?.message.content).toBe('held busy-2 done');
  });

  it('a client leaving mid-stream stops the turn, as /stop does', async () => {
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { ...say('slowly please, then leave'), user: 'leave', stream: true },
      { signal: controller.signal },
    );
    const seen: string[] = [];
    await (async () => {
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta?.content;
        if (!delta) continue;
        seen.push(delta);
        // Gone after the first words, long before the model has finished.
        controller.abort();
      }
    })().catch(() => undefined);
    expect(seen.join('')).not.toContain('Six.');
    // The stopped turn ends "Stopped." in the session: the next request's model call shows it.
    const next = await client.chat.completions.create({ ...say('after leaving'), user: 'leave' });
    expect(next.choices[0]?.message.content).toBe('echo: after leaving');
    const history = modelSaw('after leaving')[0]?.body.messages as Array<{ role: string; content: unknown }>;
    const answers = history.filter((m) => m.role === 'assistant').map((m) => String(m.content));
    expect(answers).toEqual([expect.stringMatching(/Stopped\.$/)]);
    expect(answers.join()).not.toContain('Six.');
  });

  it('a client leaving before the first words also stops the turn', async () => {
    const controller = new AbortController();
    const request = client.chat.completions.create(
      { ...say('work hold:leave-early'), user: 'leave-early' },
      { signal: controller.signal },
    );
    await gates.gate('leave-early').reachedP;
    controller.abort();
    await expect(request).rejects.toThrow();
    const next = await client.chat.completions.create({ ...say('after leaving early'), user: 'leave-early' });
    expect(next.choices[0]?.message.content).toBe('echo: after leaving early');
    const history = modelSaw('after leaving early')[0]?.body.messages as Array<{
      role: string;
      content: unknown;
    }>;
    expect(history.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(['Stopped.']);
    gates.gate('leave-early').open();
  });

  it('keeps sessions apart, remembers within one, and does not take the resent history again', async () => {
    await client.chat.completions.create({ ...say('my name is Ada'), user: 'ada' });
    await client.chat.completions.create(
      { ...say('who am I, session b?') },
      { headers: { 'X-Magpie-Session': 'bob' } },
    );
    // The client resends the conversation as OpenAI clients do; magpie takes the last message only.
    await client.chat.completions.create({
      model: 'main',
      user: 'ada',
      messages: [
        { role: 'system', content: 'You are a pirate.' },
        { role: 'user', content: 'my name is Ada' },
        { role: 'assistant', content: 'echo: my name is Ada' },
        { role: 'user', content: 'what is my name?' },
      ],
    });
    const texts = (marker: string) =>
      ((modelSaw(marker)[0]?.body.messages ?? []) as Array<{ role: string; content: unknown }>).map((m) =>
        typeof m.content === 'string' ? m.content : JSON.stringify(m.content),
      );
    const second = texts('what is my name?');
    expect(second.filter((t) => t.includes('my name is Ada')).length).toBe(2); // the user's line and the echo, once each
    expect(second.join('\n')).not.toContain('You are a pirate.');
    expect(texts('who am I, session b?').join('\n')).not.toContain('Ada');
  });

  it('answers a request retried with the same Idempotency-Key once, both attempts reading the answer', async () => {
    const headers = { 'Idempotency-Key': randomUUID() };
    const body = { ...say('retried hold:retry'), user: 'retry' };
    const first = client.chat.completions.create(body, { headers });
    await gates.gate('retry').reachedP;
    const second = client.chat.completions.create(body, { headers });
    gates.gate('retry').open();
    expect((await first).choices[0]?.message.content).toBe('held retry done');
    expect((await second).choices[0]?.message.content).toBe('held retry done');
    await client.chat.completions.create({ ...say('after the retry'), user: 'retry' });
    expect(modelSaw('retried hold:retry')).toHaveLength(1);
  });

  it('hands an image to the model, and refuses an image URL on a private address', async () => {
    const answer = await client.chat.completions.create({
      model: 'main',
      user: 'image',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is in this picture?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
          ],
        },
      ],
    });
    expect(answer.choices[0]?.message.content).toContain('what is in this picture?');
    const sent = JSON.stringify(modelSaw('what is in this picture?')[0]?.body.messages);
    expect(sent).toContain(`data:image/png;base64,${PNG}`);

    const served: string[] = [];
    const local = http.createServer((req, res) => {
      served.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(Buffer.from(PNG, 'base64'));
    });
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(local.address() as AddressInfo).port}/camera.png`;
      for (const target of [
        url,
        url.replace('127.0.0.1', '[::ffff:127.0.0.1]'),
        'http://169.254.169.254/latest/meta-data/',
      ]) {
        await expect(
          client.chat.completions.create({
            model: 'main',
            messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: target } }] }],
          }),
        ).rejects.toMatchObject({ status: 400 });
      }
      expect(served).toEqual([]);
    } finally {
      await new Promise<void>((resolve) => local.close(() => resolve()));
    }
  });

  it('/stop as message text stops the session’s running request at once', async () => {
    const running = client.chat.completions.create({ ...say('long job hold:api-stop'), user: 'stopper' });
    await gates.gate('api-stop').reachedP;
    const stop = await client.chat.completions.create({ ...say('/stop'), user: 'stopper' });
    expect(stop.choices[0]?.message.content).toBe('Stopping.');
    expect((await running).choices[0]?.message.content).toBe('Stopped.');
    gates.gate('api-stop').open();
  });
});

describe('the API with a budget spent', () => {
  it('answers 429 with the budget line, streaming or not, and the model is not called', async () => {
    const openai = await startFakeOpenAI();
    const workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-api-budget-'));
    const port = await closedPort();
    let budgetRole: RunningRole | undefined;
    try {
      const config = roleConfig(
        { workspace, openai },
        { MAGPIE_API_PORT: String(port), MAGPIE_API_KEYS: `${KEY}:phone`, MAGPIE_BUDGET_DAILY_TOKENS: '100' },
      );
      budgetRole = await startRole({ role: 'start', config, logger: silentLogger() });
      const budgeted = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: KEY, maxRetries: 0 });
      const refused = await budgeted.chat.completions
        .create({ model: 'main', messages: [{ role: 'user', content: 'spend please' }] })
        .then(
          () => undefined,
          (e: unknown) => e as { status: number; code: string; message: string },
        );
      expect(refused).toMatchObject({ status: 429, code: 'insufficient_quota' });
      expect(refused?.message).toMatch(/limit of 100 tokens is spent/);
      await expect(
        budgeted.chat.completions.create({
          model: 'main',
          messages: [{ role: 'user', content: 'stream please' }],
          stream: true,
        }),
      ).rejects.toMatchObject({ status: 429 });
      expect(openai.requests).toHaveLength(0);
    } finally {
      await stopRoleAndFakes(budgetRole, [openai], workspace);
    }
  });
});

describe('the API misconfigured', () => {
  it('a port without keys stops start-up with one line, exit 2', async () => {
    const openai = await startFakeOpenAI();
    const workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-api-bad-'));
    try {
      const config = roleConfig({ workspace, openai }, { MAGPIE_API_PORT: String(await closedPort()) });
      const started = startRole({ role: 'gateway', config, logger: silentLogger() });
      const err = await started.then(
        async (r) => {
          await r.stop();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).exitCode).toBe(ExitCode.config);
      expect((err as AppError).message).toBe(
        'MAGPIE_API_PORT is set but MAGPIE_API_KEYS lists no key:name pair',
      );
    } finally {
      await stopRoleAndFakes(undefined, [openai], workspace);
    }
  });

  it('a short key is refused when the configuration is read, without showing it', async () => {
    const { configRefusal } = await import('../../fakes/config.js');
    const err = configRefusal({ MAGPIE_API_KEYS: 'short-secret:phone' });
    expect(err.message).toMatch(/^MAGPIE_API_KEYS .*at least 24 characters/);
    expect(err.message).not.toContain('short-secret');
  });
});
