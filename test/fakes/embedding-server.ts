/**
 * A stand-in embedding server for tests and the recall benchmark: a real
 * `node:http` server on 127.0.0.1 (a free port) answering the OpenAI
 * protocol's POST /v1/embeddings (float or base64 vectors, usage) and
 * GET /v1/models. Its vectors come from a small concept table (see
 * embedding-concepts.ts), so paraphrases land close, deterministically. It
 * counts requests and inputs, and can be made to fail: an error status,
 * hanging without an answer, or a 200 with one vector too few; `close()`
 * makes it refuse connections.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { standInVector } from './embedding-concepts.js';

/** How the server misbehaves until told otherwise. */
export type EmbeddingFailure = { status: number } | { hang: true } | { shortAnswer: true };

export interface FakeEmbeddingServer {
  /** e.g. `http://127.0.0.1:40123/v1` */
  baseURL: string;
  /** Embedding requests answered or failed. */
  readonly requests: number;
  /** Every input text received, in order. */
  readonly inputs: readonly string[];
  /** The model named by each request. */
  readonly models: readonly string[];
  /** Makes every next request fail this way (undefined: answer again). */
  fail(failure: EmbeddingFailure | undefined): void;
  close(): Promise<void>;
}

export interface FakeEmbeddingOptions {
  /** Vector length. @defaultValue 256 */
  dimensions?: number;
  /** Models /v1/models lists. @defaultValue ['stand-in-embed'] */
  models?: string[];
}

/** Starts the stand-in on a free loopback port. */
export async function startFakeEmbeddings(options: FakeEmbeddingOptions = {}): Promise<FakeEmbeddingServer> {
  const dimensions = options.dimensions ?? 256;
  const listed = options.models ?? ['stand-in-embed'];
  const inputs: string[] = [];
  const models: string[] = [];
  let requests = 0;
  let failure: EmbeddingFailure | undefined;

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const embeddings = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    requests += 1;
    if (failure && 'hang' in failure) return; // never answers; close() drops the socket
    if (failure && 'status' in failure) {
      send(res, failure.status, {
        error: { message: 'the stand-in was told to fail', type: 'server_error' },
      });
      return;
    }
    let body: { input?: unknown; model?: unknown; encoding_format?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      send(res, 400, { error: { message: 'the body is not JSON', type: 'invalid_request_error' } });
      return;
    }
    const input = typeof body.input === 'string' ? [body.input] : body.input;
    if (!Array.isArray(input) || input.length === 0 || !input.every((t) => typeof t === 'string')) {
      send(res, 400, {
        error: { message: 'input must be a string or a list of strings', type: 'invalid_request_error' },
      });
      return;
    }
    inputs.push(...input);
    models.push(String(body.model));
    const base64 = body.encoding_format === 'base64';
    send(res, 200, {
      object: 'list',
      model: body.model,
      data: input.slice(failure ? 1 : 0).map((text, index) => {
        const vector = standInVector(text, dimensions);
        return {
          object: 'embedding',
          index,
          embedding: base64 ? Buffer.from(Float32Array.from(vector).buffer).toString('base64') : vector,
        };
      }),
      usage: {
        prompt_tokens: input.reduce((n, t) => n + Math.ceil(t.length / 4), 0),
        total_tokens: input.reduce((n, t) => n + Math.ceil(t.length / 4), 0),
      },
    });
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'POST' && url.pathname === '/v1/embeddings') {
      embeddings(req, res).catch(() => res.destroy());
    } else if (req.method === 'GET' && url.pathname === '/v1/models') {
      send(res, 200, {
        object: 'list',
        data: listed.map((id) => ({ id, object: 'model', owned_by: 'stand-in' })),
      });
    } else {
      send(res, 404, { error: { message: `no route ${req.method} ${url.pathname}` } });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    get requests() {
      return requests;
    },
    inputs,
    models,
    fail(next) {
      failure = next;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
