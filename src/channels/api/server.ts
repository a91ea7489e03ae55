/**
 * The OpenAI-compatible HTTP API (`MAGPIE_API_PORT`): `GET /v1/models` and
 * `POST /v1/chat/completions`, streaming or not, in OpenAI's shapes, so Open
 * WebUI, LibreChat, Home Assistant and the `openai` clients can talk to
 * magpie as if it were a model. The port serves nothing else: every other
 * path is a 404 in OpenAI's error shape.
 *
 * The key is checked before the body is read (a stranger cannot make the
 * gateway read 30 MB); each key has a cap on requests at once; a session's
 * requests run one after another (so a client firing two at once does not
 * mix their answers), except the at-once commands (`/stop`, `/approve`).
 */
import { createHash, randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { routeCommand } from '../../commands/router.js';
import type { ApiKey } from '../../config/api-keys.js';
import { describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import {
  type DeltaSource,
  type ExchangeBus,
  type ExchangeEnd,
  type ExchangeUsage,
  runExchange,
} from './exchange.js';
import { readImages } from './images.js';
import { findKey } from './keys.js';
import { type ChatRequest, readChatRequest } from './request.js';
import { sessionNameOf } from './session.js';
import { SseAnswer } from './sse.js';

/** What the API server needs. */
export interface ApiServerOptions {
  bus: ExchangeBus;
  logger: Logger;
  keys: readonly ApiKey[];
  /** The agents a request's `model` may name (GET /v1/models lists them). */
  agents: readonly string[];
  maxBodyBytes: number;
  maxMediaBytes: number;
  /** A request's time limit. */
  timeoutMs: number;
  /** Requests one key may have running (or waiting for its session) at once. */
  maxConcurrent: number;
  /** Image URLs on private addresses are read too (MAGPIE_WEB_ALLOW_PRIVATE). */
  allowPrivateImages: boolean;
}

/** How long a stream may show nothing before its headers go out anyway. */
const STREAM_BEGIN_MS = 3_000;
/** How often a begun stream that shows nothing hears a comment. */
const KEEP_ALIVE_MS = 15_000;

/** An error in OpenAI's shape. */
export function openAiError(
  res: Response,
  status: number,
  error: { message: string; type: string; param?: string | null; code?: string | null },
): void {
  if (res.headersSent) return;
  res.status(status).json({ error: { param: null, code: null, ...error } });
}

type Authed = Response<unknown, { key: ApiKey }>;

/** The API's express app. */
export function apiApp(o: ApiServerOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const running = new Map<string, number>();
  const sessions = new SessionLine();
  const created = Math.floor(Date.now() / 1000);

  // The key first: nothing of the request is read for a caller without one.
  app.use('/v1', (req: Request, res: Response, next: NextFunction) => {
    const header = req.get('authorization') ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const key = match?.[1] ? findKey(o.keys, match[1]) : undefined;
    if (!key) {
      openAiError(res, 401, {
        message: match ? 'Incorrect API key provided.' : 'Missing API key: send Authorization: Bearer <key>.',
        type: 'invalid_request_error',
        code: 'invalid_api_key',
      });
      return;
    }
    res.locals.key = key;
    next();
  });

  app.get('/v1/models', (_req, res) => {
    res.json({
      object: 'list',
      data: o.agents.map((id) => ({ id, object: 'model', created, owned_by: 'magpie' })),
    });
  });

  app.post(
    '/v1/chat/completions',
    (_req: Request, res: Authed, next: NextFunction) => {
      const name = res.locals.key.name;
      const now = running.get(name) ?? 0;
      if (now >= o.maxConcurrent) {
        openAiError(res, 429, {
          message: `This key already has ${now} requests running (at most ${o.maxConcurrent} at once); try again when one has finished.`,
          type: 'rate_limit_exceeded',
          code: 'rate_limit_exceeded',
        });
        return;
      }
      running.set(name, now + 1);
      res.once('close', () => {
        const left = (running.get(name) ?? 1) - 1;
        if (left <= 0) running.delete(name);
        else running.set(name, left);
      });
      next();
    },
    express.json({ limit: o.maxBodyBytes, type: () => true }),
    (req: Request, res: Authed) => {
      void completions(o, sessions, req, res).catch((err: unknown) => {
        o.logger.error({ err: describeError(err) }, 'api request failed');
        openAiError(res, 500, { message: 'magpie could not answer this request', type: 'server_error' });
        if (!res.writableEnded) res.end();
      });
    },
  );

  app.use((_req, res) => {
    openAiError(res, 404, {
      message: 'Not found: magpie serves /v1/chat/completions and /v1/models.',
      type: 'invalid_request_error',
    });
  });

  // Body errors: over the cap, not JSON.
  app.use((err: { type?: string; status?: number }, _req: Request, res: Response, _next: NextFunction) => {
    if (err.type === 'entity.too.large') {
      openAiError(res, 413, {
        message: `The request body is over ${Math.round(o.maxBodyBytes / 1024 / 1024)} MiB (MAGPIE_API_MAX_BODY).`,
        type: 'invalid_request_error',
      });
    } else if (err.status === 400) {
      openAiError(res, 400, { message: 'The body is not valid JSON.', type: 'invalid_request_error' });
    } else {
      o.logger.error({ err: describeError(err) }, 'api request failed');
      openAiError(res, 500, { message: 'magpie could not read this request', type: 'server_error' });
    }
  });
  return app;
}

async function completions(
  o: ApiServerOptions,
  sessions: SessionLine,
  req: Request,
  res: Authed,
): Promise<void> {
  const key = res.locals.key;
  const request = readChatRequest(req.body);
  if ('status' in request) {
    openAiError(res, 400, {
      message: request.message,
      type: 'invalid_request_error',
      param: request.param ?? null,
    });
    return;
  }
  if (!o.agents.includes(request.model)) {
    openAiError(res, 404, {
      message: `The model '${request.model.slice(0, 100)}' does not exist: magpie's are ${o.agents.join(', ')} (GET /v1/models).`,
      type: 'invalid_request_error',
      param: 'model',
      code: 'model_not_found',
    });
    return;
  }
  const gone = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) gone.abort();
  });
  const images = await readImages(request.imageUrls, {
    maxBytes: o.maxMediaBytes,
    signal: gone.signal,
    allowPrivate: o.allowPrivateImages,
  });
  if ('problem' in images) {
    openAiError(res, 400, { message: images.problem, type: 'invalid_request_error', param: 'messages' });
    return;
  }
  const session = sessionNameOf(req.get('x-magpie-session') ?? request.user);
  // A retry with the same Idempotency-Key is the same message (the bus takes it once) with the
  // same reply address (where the first attempt's answer waits).
  const idempotency = req.get('idempotency-key')?.trim();
  const address = idempotency
    ? `api-i-${createHash('sha256').update(`${key.name}\0${idempotency}`).digest('hex').slice(0, 32)}`
    : randomUUID();
  const message = {
    id: `api:${address}`,
    channel: 'api',
    chatId: key.name,
    ...(session ? { threadId: session } : {}),
    senderId: key.name,
    senderName: key.name,
    content: request.text,
    media: images.media,
    platformMessageId: address,
    // The model named the agent: the gateway's router sends the message to it.
    metadata: { replyAddress: address, agent: request.model },
  };
  const sessionKey = session ? `api:${key.name}/${session}` : `api:${key.name}`;
  const answer = new Answer(res, request, `chatcmpl-${address}`);
  const run = () =>
    runExchange({
      bus: o.bus,
      message,
      timeoutMs: o.timeoutMs,
      signal: gone.signal,
      replay: idempotency !== undefined && idempotency !== '',
      ...(request.stream
        ? { onDelta: (text: string, source: DeltaSource) => answer.delta(text, source) }
        : {}),
    });
  const stopWaiting = answer.waitPatiently();
  let end: ExchangeEnd;
  try {
    // At-once commands do not wait for the session's running request (that is what /stop is for).
    end =
      routeCommand(request.text).runs === 'at-once'
        ? await run()
        : await sessions.run(`${request.model}\0${sessionKey}`, run);
  } catch (err) {
    o.logger.warn({ err: describeError(err), key: key.name }, 'api request not queued');
    answer.fail(
      503,
      'magpie cannot take the message now (its message bus is unreachable); try again shortly.',
      'server_error',
    );
    return;
  } finally {
    stopWaiting();
  }
  answer.end(end, o.timeoutMs);
}

/** Writes the answer: one JSON object, or the stream's chunks (headers sent with the first text). */
class Answer {
  readonly #sse: SseAnswer | undefined;
  readonly #created = Math.floor(Date.now() / 1000);

  constructor(
    private readonly res: Response,
    private readonly request: ChatRequest,
    private readonly id: string,
  ) {
    this.#sse = request.stream
      ? new SseAnswer(res, { id, model: request.model, created: this.#created })
      : undefined;
  }

  /** Text for a streaming client: the model's words begin the stream; a whole message waits for them (or the end). */
  delta(text: string, source: DeltaSource): void {
    this.#sse?.delta(text, source === 'message');
  }

  /**
   * A stream that has shown nothing after {@link STREAM_BEGIN_MS} begins anyway, then hears a
   * comment every {@link KEEP_ALIVE_MS}, so clients and proxies do not give up on a slow turn.
   * Returns the stop.
   */
  waitPatiently(): () => void {
    const sse = this.#sse;
    if (!sse) return () => {};
    const begin = setTimeout(() => sse.begin(), STREAM_BEGIN_MS);
    const alive = setInterval(() => sse.keepAlive(), KEEP_ALIVE_MS);
    return () => {
      clearTimeout(begin);
      clearInterval(alive);
    };
  }

  fail(status: number, message: string, type: string): void {
    if (this.#sse?.started) this.#sse.error(message, type);
    else openAiError(this.res, status, { message, type });
  }

  end(end: ExchangeEnd, timeoutMs: number): void {
    switch (end.kind) {
      case 'abandoned':
        if (!this.res.writableEnded) this.res.end();
        return;
      case 'timeout':
        this.fail(
          504,
          `magpie did not finish within ${Math.round(timeoutMs / 1000)} s (MAGPIE_API_TIMEOUT); the turn was stopped.`,
          'server_error',
        );
        return;
      case 'failed':
        this.fail(502, end.text, 'server_error');
        return;
      case 'answered':
        if (end.budget && !this.#sse?.started) {
          openAiError(this.res, 429, {
            message: end.text,
            type: 'insufficient_quota',
            code: 'insufficient_quota',
          });
          return;
        }
        if (this.#sse)
          this.#sse.finish(this.request.includeUsage ? usageOf(end.usage) : undefined, end.messages);
        else this.res.json(this.completion(end));
    }
  }

  completion({ text, usage, messages }: Extract<ExchangeEnd, { kind: 'answered' }>) {
    return {
      id: this.id,
      object: 'chat.completion',
      created: this.#created,
      model: this.request.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: text, refusal: null },
          logprobs: null,
          finish_reason: 'stop',
        },
      ],
      usage: usageOf(usage),
      magpie: { messages },
    };
  }
}

/** OpenAI's usage object (zeros when the turn made no model call, e.g. a command). */
function usageOf(usage: ExchangeUsage | undefined) {
  const prompt = usage?.promptTokens ?? 0;
  const completion = usage?.completionTokens ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: usage?.cachedTokens ?? 0 },
  };
}

/** One request at a time per session, in arrival order (a request whose client left meanwhile ends at once: runExchange). */
class SessionLine {
  readonly #tails = new Map<string, Promise<unknown>>();

  async run<T>(session: string, task: () => Promise<T>): Promise<T> {
    const before = this.#tails.get(session) ?? Promise.resolve();
    const mine = before.catch(() => undefined).then(() => task());
    const tail = mine.catch(() => undefined);
    this.#tails.set(session, tail);
    void tail.then(() => {
      if (this.#tails.get(session) === tail) this.#tails.delete(session);
    });
    return mine;
  }
}
