/** The fake OpenAI server itself: reply precedence, chunk shapes, auth, waiting and the runnable. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { commonPrefix, type FakeOpenAI, type FakeReply, startFakeOpenAI } from '../../fakes/openai-server.js';

let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

interface Chunk {
  choices: { delta: Record<string, unknown>; finish_reason?: string | null }[];
  usage?: unknown;
}

async function streamChunks(
  baseURL: string,
  body: Record<string, unknown>,
): Promise<{ chunks: Chunk[]; done: boolean }> {
  const res = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [], stream: true, ...body }),
  });
  expect(res.headers.get('content-type')).toBe('text/event-stream');
  const events = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: '));
  const done = events.at(-1) === 'data: [DONE]';
  return {
    chunks: events.filter((e) => e !== 'data: [DONE]').map((e) => JSON.parse(e.slice(6)) as Chunk),
    done,
  };
}

async function chat(baseURL: string): Promise<string> {
  const res = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [] }),
  });
  const body = (await res.json()) as { choices: { message: { content: string } }[] };
  return body.choices[0]?.message.content ?? '';
}

describe('fake OpenAI server', () => {
  it('answers from the queue, then the responder, then "ok"', async () => {
    fake = await startFakeOpenAI();
    expect(await chat(fake.baseURL)).toBe('ok');
    fake.setResponder((_req, index) => ({ content: `responder ${index}` }));
    fake.enqueue({ content: 'queued' });
    expect(await chat(fake.baseURL)).toBe('queued');
    expect(await chat(fake.baseURL)).toBe('responder 2');
    expect(fake.requests.map((r) => r.path)).toEqual(Array(3).fill('/v1/chat/completions'));
  });

  it('with record: false keeps no request, yet counts them for the responder and waitForRequests', async () => {
    fake = await startFakeOpenAI({
      record: false,
      responder: (_req, index) => ({ content: `answer ${index}` }),
    });
    const waiting = fake.waitForRequests(2, 5_000);
    expect(await chat(fake.baseURL)).toBe('answer 0');
    expect(await chat(fake.baseURL)).toBe('answer 1');
    await waiting;
    expect(fake.requests).toEqual([]);
  });

  it('streams tool calls: id and name first, arguments in pieces, indexes interleaved, usage last', async () => {
    fake = await startFakeOpenAI();
    const reply: FakeReply = {
      toolCalls: [
        { id: 'a', name: 'one', arguments: '{"x":1}' },
        { id: 'b', name: 'two', arguments: '{"y":2}' },
      ],
    };
    fake.enqueue(reply);
    const { chunks, done } = await streamChunks(fake.baseURL, { stream_options: { include_usage: true } });
    expect(done).toBe(true);
    const deltas = chunks.flatMap(
      (c) => (c.choices[0]?.delta.tool_calls as { index: number }[] | undefined) ?? [],
    );
    expect(deltas.slice(0, 2)).toMatchObject([
      { index: 0, id: 'a', type: 'function', function: { name: 'one' } },
      { index: 1, id: 'b', type: 'function', function: { name: 'two' } },
    ]);
    const order = deltas.slice(2).map((d) => d.index);
    expect(order.filter((i) => i === 0).length).toBeGreaterThanOrEqual(2);
    expect(order.slice(0, 2)).toEqual([0, 1]);
    expect(chunks.at(-1)?.choices).toEqual([]);
    expect(chunks.at(-1)?.usage).toBeDefined();
  });

  it('omits role, type and finish_reason when asked', async () => {
    fake = await startFakeOpenAI();
    fake.enqueue({ content: 'hey', toolCalls: [{ name: 'one', arguments: '{}' }], omitOptionalFields: true });
    const { chunks } = await streamChunks(fake.baseURL, {});
    const text = JSON.stringify(chunks);
    expect(text).not.toContain('"role"');
    expect(text).not.toContain('"type"');
    expect(text).not.toContain('finish_reason');
  });

  it('refuses a wrong key with an OpenAI-style 401 and records the request', async () => {
    fake = await startFakeOpenAI({ apiKey: 'right' });
    const res = await fetch(`${fake.baseURL}/models`, { headers: { authorization: 'Bearer wrong' } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
    const ok = await fetch(`${fake.baseURL}/models`, { headers: { authorization: 'Bearer right' } });
    expect(ok.status).toBe(200);
  });

  it('waitForRequests resolves on arrival and rejects on timeout', async () => {
    fake = await startFakeOpenAI();
    const waiting = fake.waitForRequests(2, 5_000);
    await chat(fake.baseURL);
    await chat(fake.baseURL);
    await expect(waiting).resolves.toBeUndefined();
    await expect(fake.waitForRequests(3, 50)).rejects.toThrow(/3 requests, got 2/);
  });

  it('runs as a process that prints its baseURL and answers', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'test/fakes/openai-server-main.ts', '--port', '0'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    try {
      const lines = createInterface({ input: child.stdout });
      const [line] = (await once(lines, 'line')) as [string];
      const { baseURL } = JSON.parse(line) as { baseURL: string };
      expect(baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      expect(await chat(baseURL)).toBe('ok');
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });

  it('commonPrefix counts the characters two strings share, at every slice boundary', () => {
    const base = `${'é'.repeat(300)}${'a'.repeat(20_000)}`;
    // The prefix a character loop finds: what the fake's prompt-cache figure has always been.
    const byLoop = (a: string, b: string) => {
      let i = 0;
      while (i < Math.min(a.length, b.length) && a[i] === b[i]) i += 1;
      return i;
    };
    for (const at of [0, 1, 255, 256, 257, 8191, 8192, 8193, 8448, 16_500, base.length - 1]) {
      const other = `${base.slice(0, at)}x${base.slice(at + 1)}`;
      expect(commonPrefix(base, other)).toBe(at);
      expect(commonPrefix(other, base)).toBe(byLoop(other, base));
    }
    expect(commonPrefix(base, base)).toBe(base.length);
    expect(commonPrefix(base, base.slice(0, 9000))).toBe(9000);
    expect(commonPrefix('', base)).toBe(0);
  });
});
