/**
 * A fake OpenAI-compatible HTTP server for tests and benchmarks: a real
 * `node:http` server on 127.0.0.1 speaking chat completions (SSE streaming and
 * plain JSON, tool calls split across chunks, usage), model listing and audio
 * transcription. Replies are scripted per test with `enqueue` or a responder.
 * Like a provider's prompt cache, it reports as cached (`cached_tokens`) the
 * longest byte-identical prefix a request shares with one of the recent ones.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A tool call the fake model makes. `id` undefined → a generated id; `id: ''` → the id is left out of the chunk. */
export interface FakeToolCall {
  id?: string;
  name: string;
  arguments: string;
}

/** One scripted answer to a chat-completion request. */
export interface FakeReply {
  /** Streamed in several chunks ('' allowed). */
  content?: string;
  /** Streamed split across chunks: id+name first, arguments in 2+ pieces, indexes interleaved. */
  toolCalls?: FakeToolCall[];
  /** Sent as `delta.reasoning_content` (non-streaming: `message.reasoning_content`). */
  reasoning?: string;
  /**
   * Usage reported as given (extra fields such as `prompt_tokens_details` or `cache_read_input_tokens`
   * pass through); when absent, estimated from the text lengths, with `prompt_tokens_details.cached_tokens`
   * for the prefix shared with a recent request.
   */
  usage?: { prompt_tokens: number; completion_tokens: number; [field: string]: unknown };
  /**
   * Wait before answering (a slow model). Streaming replies send the headers and the role chunk first,
   * then wait, so the client sees an open stream. Stops cleanly if the client disconnects.
   */
  delayMs?: number;
  /**
   * A model that writes slowly: the content is streamed in `pieces` chunks (default 3) with
   * `pieceDelayMs` between them. Stops cleanly if the client disconnects.
   */
  pieceDelayMs?: number;
  /** How many chunks the content is streamed in (with `pieceDelayMs`). @defaultValue 3 */
  pieces?: number;
  /** Error status (401, 429, 500, 400 ...). */
  status?: number;
  /** Extra response headers of an error reply, e.g. `{ 'retry-after': '30' }`. */
  headers?: Record<string, string>;
  /** Error body, e.g. `{ message: '...', code: 'context_length_exceeded' }`. Without `status`, 400 is used. */
  error?: { message: string; code?: string; type?: string };
  /** Send this raw body as-is (garbage); content type follows the request's `stream` flag. */
  raw?: string;
  /** Omit `type`, `role` and `finish_reason` in chunks, as some compatible servers do. */
  omitOptionalFields?: boolean;
  /**
   * Called once, right before the first content chunk is written (streaming) or the
   * JSON answer is sent (non-streaming): the model's "first token", for benchmarks.
   * Not called for error, raw or content-less replies.
   */
  onFirstPiece?: () => void;
}

/** A request as the fake received it; `body` is the parsed JSON (or the raw text if it was not JSON). */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary fields of the request body.
  body: any;
  /** The body exactly as it arrived (for byte-prefix checks). */
  raw: string;
}

export type FakeResponder = (req: RecordedRequest, index: number) => FakeReply | Promise<FakeReply>;

export interface FakeOpenAI {
  /** e.g. http://127.0.0.1:PORT/v1 */
  readonly baseURL: string;
  /** Chat-completion requests only, in arrival order (including those refused for a wrong key); empty with `record: false`. */
  readonly requests: RecordedRequest[];
  /** FIFO replies; used before the responder. */
  enqueue(...replies: FakeReply[]): void;
  setResponder(fn: FakeResponder): void;
  /** POST /v1/audio/speech bodies (JSON: model, voice, input, response_format), in arrival order. */
  readonly speechRequests: Array<{
    model?: string;
    voice?: string;
    input?: string;
    response_format?: string;
  }>;
  /** POST /v1/audio/transcriptions files (the multipart `file` part), in arrival order. */
  readonly transcriptionRequests: Array<{ fileName: string; contentType: string; bytes: Buffer }>;
  /** The next `times` speech requests answer 500. */
  failSpeech(times?: number): void;
  /** Resolves once `n` chat requests have arrived (event-driven); rejects after `timeoutMs` (default 5000). */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export interface FakeOpenAIOptions {
  /** Ids listed by GET /v1/models. Default `['fake-model']`. */
  models?: string[];
  /** When set, requests must carry `Authorization: Bearer <apiKey>`; otherwise any key is accepted. */
  apiKey?: string;
  /** Text returned by POST /v1/audio/transcriptions. Default `'fake transcript'`. */
  transcript?: string;
  /**
   * What POST /v1/audio/speech answers (`response_format: 'opus'`: audio/ogg), e.g. the real OGG/Opus
   * the test set-up made (test/fakes/opus-audio.ts). Unset: speech answers 404 like a chat-only server.
   */
  speechAudio?: Buffer;
  responder?: FakeResponder;
  /**
   * Whether `requests` keeps every chat request. Off for runs of many thousand requests
   * (bench:chaos): each body carries its chat's history, and a six-minute chaos run's
   * bodies filled a 4 GB heap. `waitForRequests` and the responder's index count them either way.
   * @defaultValue true
   */
  record?: boolean;
  /** Port to bind on 127.0.0.1. Default 0 (any free port). */
  port?: number;
}

/** Starts the fake on 127.0.0.1. Close it with `close()` in `afterAll`/`afterEach`. */
export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const models = options.models ?? ['fake-model'];
  const transcript = options.transcript ?? 'fake transcript';
  const queue: FakeReply[] = [];
  const requests: RecordedRequest[] = [];
  const record = options.record ?? true;
  /** Chat requests received (recorded or not). */
  let received = 0;
  /** Bodies of the latest chat requests: the fake's "prompt cache". */
  const recent: string[] = [];
  const waiters = new Set<() => void>();
  let responder = options.responder;
  const speechRequests: FakeOpenAI['speechRequests'] = [];
  const transcriptionRequests: FakeOpenAI['transcriptionRequests'] = [];
  let speechFailures = 0;

  const notify = () => {
    for (const waiter of [...waiters]) waiter();
  };

  const nextReply = async (req: RecordedRequest, index: number): Promise<FakeReply> => {
    const queued = queue.shift();
    if (queued) return queued;
    if (responder) return responder(req, index);
    return { content: 'ok' };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, abort: AbortSignal): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const rawBody = await readBody(req);
    const authorized =
      options.apiKey === undefined || req.headers.authorization === `Bearer ${options.apiKey}`;

    if (req.method === 'POST' && path === '/v1/chat/completions') {
      const raw = rawBody.toString('utf8');
      const recorded: RecordedRequest = {
        method: req.method,
        path,
        headers: req.headers,
        body: parseJson(raw),
        raw,
      };
      const cachedChars = Math.max(0, ...recent.map((earlier) => commonPrefix(earlier, raw)));
      recent.push(raw);
      if (recent.length > RECENT_BODIES) recent.shift();
      const index = received++;
      if (record) requests.push(recorded);
      notify();
      if (!authorized) return sendAuthError(res);
      if (typeof recorded.body !== 'object' || recorded.body === null) {
        return sendError(res, 400, { message: 'request body is not JSON', type: 'invalid_request_error' });
      }
      const reply = await nextReply(recorded, index);
      return sendChat(res, recorded.body, reply, abort, cachedChars);
    }
    if (!authorized) return sendAuthError(res);
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: models.map((id) => modelEntry(id)) });
    }
    if (req.method === 'POST' && path === '/v1/audio/speech' && options.speechAudio) {
      let body: (typeof speechRequests)[number];
      try {
        body = JSON.parse(rawBody.toString('utf8')) as (typeof speechRequests)[number];
      } catch {
        return sendError(res, 400, { message: 'request body is not JSON', type: 'invalid_request_error' });
      }
      speechRequests.push(body);
      notify();
      if (speechFailures > 0) {
        speechFailures -= 1;
        return sendError(res, 500, { message: 'speech engine down', type: 'server_error' });
      }
      if (typeof body.input !== 'string' || body.input === '' || typeof body.model !== 'string') {
        return sendError(res, 400, {
          message: 'model and input are required',
          type: 'invalid_request_error',
        });
      }
      if (body.response_format !== 'opus') {
        return sendError(res, 400, { message: 'this fake speaks opus only', type: 'invalid_request_error' });
      }
      res.writeHead(200, { 'content-type': 'audio/ogg', 'content-length': options.speechAudio.length });
      res.end(options.speechAudio);
      return;
    }
    if (req.method === 'POST' && path === '/v1/audio/transcriptions') {
      const text = rawBody.toString('latin1');
      if (!/content-type: multipart\/form-data/i.test(`content-type: ${req.headers['content-type'] ?? ''}`)) {
        return sendError(res, 400, {
          message: 'expected multipart/form-data',
          type: 'invalid_request_error',
        });
      }
      if (!/name="file"/.test(text)) {
        return sendError(res, 400, { message: 'missing file field', type: 'invalid_request_error' });
      }
      transcriptionRequests.push(filePart(rawBody));
      return sendJson(res, 200, { text: transcript });
    }
    return sendError(res, 404, { message: `no route ${req.method} ${path}`, type: 'invalid_request_error' });
  };

  const server = createServer((req, res) => {
    const controller = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    handle(req, res, controller.signal).catch((err: unknown) => {
      if (controller.signal.aborted || res.writableEnded) return;
      const message = err instanceof Error ? err.message : String(err);
      if (res.headersSent) res.end();
      else sendError(res, 500, { message: `fake server error: ${message}`, type: 'server_error' });
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    speechRequests,
    transcriptionRequests,
    failSpeech: (times = 1) => {
      speechFailures += times;
    },
    enqueue: (...replies) => {
      queue.push(...replies);
    },
    setResponder: (fn) => {
      responder = fn;
    },
    waitForRequests: (n, timeoutMs = 5000) =>
      new Promise<void>((resolve, reject) => {
        if (received >= n) return resolve();
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`fake OpenAI: waited ${timeoutMs} ms for ${n} requests, got ${received}`));
        }, timeoutMs);
        const check = () => {
          if (received < n) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
      }),
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function modelEntry(id: string) {
  return { id, object: 'model', created: 0, owned_by: 'fake' };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // Not JSON: keep the text so the test can see what arrived; the handler answers 400.
    return text;
  }
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { ...headers, 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function sendError(
  res: ServerResponse,
  status: number,
  error: { message: string; code?: string; type?: string },
  headers: Record<string, string> = {},
) {
  sendJson(
    res,
    status,
    {
      error: {
        message: error.message,
        type: error.type ?? 'invalid_request_error',
        param: null,
        code: error.code ?? null,
      },
    },
    headers,
  );
}

function sendAuthError(res: ServerResponse): void {
  sendError(res, 401, {
    message:
      'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.',
    type: 'invalid_request_error',
    code: 'invalid_api_key',
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Splits text into about `count` pieces (at least one piece, '' stays one empty piece). */
function split(text: string, count: number): string[] {
  if (text.length < count) return text.length === 0 ? [''] : [...text];
  const size = Math.ceil(text.length / count);
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

/** Chat bodies the fake's prompt cache remembers. */
const RECENT_BODIES = 32;

/**
 * Length of the longest common prefix of two strings. Equal stretches are compared natively a
 * slice at a time (8,192 characters, then 256, then one): a character loop over every recent body
 * cost the fake ~10 ms a request, which spread 100 simultaneous requests over a second.
 */
export function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  for (const size of [8192, 256, 1]) {
    while (i + size <= n && a.slice(i, i + size) === b.slice(i, i + size)) i += size;
  }
  return i;
}

function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

async function sendChat(
  res: ServerResponse,
  // biome-ignore lint/suspicious/noExplicitAny: the request body is whatever the client sent.
  body: any,
  reply: FakeReply,
  abort: AbortSignal,
  cachedChars: number,
): Promise<void> {
  const stream = body.stream === true;
  const delayMs = reply.delayMs ?? 0;
  const opensStream = stream && reply.raw === undefined && reply.status === undefined && !reply.error;
  if (delayMs > 0 && !opensStream && !(await sleep(delayMs, abort))) return;

  if (reply.raw !== undefined) {
    res.writeHead(reply.status ?? 200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
    res.end(reply.raw);
    return;
  }
  if (reply.status !== undefined || reply.error) {
    const status = reply.status ?? 400;
    return sendError(
      res,
      status,
      reply.error ?? { message: `fake error ${status}`, type: 'server_error' },
      reply.headers,
    );
  }

  const model = typeof body.model === 'string' ? body.model : 'fake-model';
  const id = `chatcmpl-${randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  const content = reply.content ?? '';
  const calls = (reply.toolCalls ?? []).map((call, i) => ({
    ...call,
    id: call.id ?? `call_${i}_${id.slice(-8)}`,
  }));
  const finishReason = calls.length > 0 ? 'tool_calls' : 'stop';
  const promptTokens = estimateTokens(JSON.stringify(body.messages ?? ''));
  const usage = reply.usage ?? {
    prompt_tokens: promptTokens,
    completion_tokens: estimateTokens(content + calls.map((c) => c.arguments).join('')),
    prompt_tokens_details: { cached_tokens: Math.min(promptTokens, Math.floor(cachedChars / 4)) },
  };
  const fullUsage = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };

  if (!stream) {
    const message: Record<string, unknown> = {
      role: 'assistant',
      content: calls.length && !content ? null : content,
    };
    if (reply.reasoning) message.reasoning_content = reply.reasoning;
    if (content) reply.onFirstPiece?.();
    if (calls.length) {
      message.tool_calls = calls.map((c) => ({
        ...(c.id ? { id: c.id } : {}),
        type: 'function',
        function: { name: c.name, arguments: c.arguments },
      }));
    }
    return sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
      usage: fullUsage,
    });
  }

  const omit = reply.omitOptionalFields === true;
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  const send = (delta: Record<string, unknown>, finish: string | null = null) => {
    const choice: Record<string, unknown> = { index: 0, delta };
    if (!omit) choice.finish_reason = finish;
    else if (finish) choice.finish_reason = finish;
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [choice] })}\n\n`,
    );
  };

  send(omit ? { content: '' } : { role: 'assistant', content: '' });
  if (delayMs > 0 && !(await sleep(delayMs, abort))) return;

  for (const piece of reply.reasoning ? split(reply.reasoning, 2) : []) send({ reasoning_content: piece });
  if (content) {
    for (const [index, piece] of split(content, reply.pieces ?? 3).entries()) {
      if (index > 0 && reply.pieceDelayMs && !(await sleep(reply.pieceDelayMs, abort))) return;
      if (index === 0) reply.onFirstPiece?.();
      send({ content: piece });
    }
  }

  // Tool calls: the first delta of each index carries id and name; arguments follow in 2+ pieces, interleaved.
  calls.forEach((call, index) => {
    const head: Record<string, unknown> = { index, function: { name: call.name, arguments: '' } };
    if (call.id) head.id = call.id;
    if (!omit) head.type = 'function';
    send({ tool_calls: [head] });
  });
  const pieces = calls.map((call) => {
    const parts = split(call.arguments, 3);
    return parts.length >= 2 ? parts : ['', ...parts];
  });
  const rounds = Math.max(0, ...pieces.map((p) => p.length));
  for (let round = 0; round < rounds; round++) {
    pieces.forEach((parts, index) => {
      const part = parts[round];
      if (part !== undefined) send({ tool_calls: [{ index, function: { arguments: part } }] });
    });
  }

  if (!omit) send({}, finishReason);
  if (body.stream_options?.include_usage === true) {
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: fullUsage })}\n\n`,
    );
  }
  res.end('data: [DONE]\n\n');
}

/** The text of the last user message the model was sent, without the context block magpie ends it with. */
export function lastUserText(req: RecordedRequest): string {
  const messages = req.body.messages as Array<{ role: string; content: unknown }>;
  const last = [...messages].reverse().find((m) => m.role === 'user');
  if (!last) return '';
  const text =
    typeof last.content === 'string'
      ? last.content
      : (last.content as Array<{ type: string; text?: string }>).map((p) => p.text ?? '').join(' ');
  return withoutContextBlock(text);
}

/** `text` without a trailing `<context>…</context>` block (see src/agent/prompt-note.ts). */
export function withoutContextBlock(text: string): string {
  return text.replace(/\s*<context>\n[\s\S]*?\n<\/context>$/, '');
}

/** The `file` part of a multipart/form-data body: its file name, Content-Type and bytes. */
function filePart(raw: Buffer): FakeOpenAI['transcriptionRequests'][number] {
  const text = raw.toString('latin1');
  const head =
    /Content-Disposition: form-data; name="file"; filename="([^"]*)"\r\nContent-Type: ([^\r]*)\r\n\r\n/i.exec(
      text,
    );
  if (!head) return { fileName: '', contentType: '', bytes: Buffer.alloc(0) };
  const start = head.index + head[0].length;
  const boundary = /^(--[^\r]+)\r\n/.exec(text)?.[1] ?? '';
  const end = text.indexOf(`\r\n${boundary}`, start);
  return {
    fileName: head[1] ?? '',
    contentType: head[2] ?? '',
    bytes: raw.subarray(start, end < 0 ? undefined : end),
  };
}
