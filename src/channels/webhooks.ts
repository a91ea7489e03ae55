/**
 * The gateway's webhook listener: one HTTP server of its own
 * (MAGPIE_WEBHOOK_PORT on MAGPIE_WEBHOOK_HOST, 127.0.0.1 by default), apart
 * from the dashboard, so putting webhooks on the internet never puts the
 * dashboard there. Channels that are told about messages by HTTP (WhatsApp)
 * mount one route each through the `WebhookRoutes` port they get in their
 * start deps; the listener reads the body (size-capped: 413 past the route's
 * limit, before the handler sees anything) and hands the handler the raw
 * bytes, since signatures are computed over exactly those. The handler
 * answers with a status: it decides what 200 means (the WhatsApp route
 * answers it only once the messages are on the bus). A path no route holds
 * is a 404; a handler that throws is a 500.
 *
 * A new webhook channel mounts `/webhooks/<name>` in its `start()` and
 * unmounts it in `stop()`; the gateway and this file do not change.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';

/** One request, as a route's handler sees it. */
export interface WebhookRequest {
  /** GET, POST, … */
  method: string;
  /** The path and query as received (on a placeholder origin: only the path and query are meaningful). */
  url: URL;
  headers: IncomingHttpHeaders;
  /** The raw body, byte for byte (a signature covers exactly these bytes); empty for GET and HEAD. */
  body: Buffer;
}

/** A handler's answer. */
export interface WebhookResponse {
  status: number;
  /** Plain text. @defaultValue empty */
  body?: string;
}

/** Handles one request to a mounted path. A rejection is answered 500. */
export type WebhookHandler = (request: WebhookRequest) => Promise<WebhookResponse>;

export interface WebhookRouteOptions {
  /** The largest body taken; a longer one is answered 413 unread by the handler. @defaultValue {@link DEFAULT_MAX_BODY_BYTES} */
  maxBodyBytes?: number;
}

/** What a webhook channel gets from the gateway: a place to mount its route. */
export interface WebhookRoutes {
  /** The listener's port (MAGPIE_WEBHOOK_PORT); undefined when none is set, and nothing is served. */
  readonly port: number | undefined;
  /**
   * Serves `path` (exactly, e.g. `/webhooks/whatsapp`) with `handler`. Returns the unmount. Throws
   * when the path is already mounted.
   */
  mount(path: string, handler: WebhookHandler, options?: WebhookRouteOptions): () => void;
}

/** A route's body limit unless it sets its own. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export interface WebhookListenerOptions {
  /** MAGPIE_WEBHOOK_PORT; undefined: never listens. */
  port: number | undefined;
  /** MAGPIE_WEBHOOK_HOST. @defaultValue '127.0.0.1' */
  host?: string;
  logger: Logger;
  /** Longest time one request (body and handler) may take. @defaultValue 60000 */
  requestTimeoutMs?: number;
  /** How long `close()` lets requests in flight finish before cutting them. @defaultValue 10000 */
  closeGraceMs?: number;
}

interface Route {
  handler: WebhookHandler;
  maxBodyBytes: number;
}

/** The listener: routes mounted by channels, served once `listen()` is called. */
export class WebhookListener implements WebhookRoutes {
  readonly port: number | undefined;
  private readonly host: string;
  private readonly logger: Logger;
  private readonly routes = new Map<string, Route>();
  private readonly requestTimeoutMs: number;
  private readonly closeGraceMs: number;
  private server: Server | undefined;
  private address: string | undefined;
  private closing: Promise<void> | undefined;

  constructor(options: WebhookListenerOptions) {
    this.port = options.port;
    this.host = options.host ?? '127.0.0.1';
    this.logger = options.logger.child({ component: 'webhooks' });
    this.requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
    this.closeGraceMs = options.closeGraceMs ?? 10_000;
  }

  mount(path: string, handler: WebhookHandler, options: WebhookRouteOptions = {}): () => void {
    if (!path.startsWith('/')) throw new TypeError(`a webhook path starts with /: ${path}`);
    if (this.routes.has(path)) throw new TypeError(`the webhook path ${path} is already mounted`);
    const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 1) throw new RangeError('maxBodyBytes must be ≥ 1');
    const route = { handler, maxBodyBytes };
    this.routes.set(path, route);
    return () => {
      if (this.routes.get(path) === route) this.routes.delete(path);
    };
  }

  /** The mounted paths. */
  paths(): string[] {
    return [...this.routes.keys()];
  }

  /** `http://host:port` once listening; undefined before (or without a port). */
  get url(): string | undefined {
    return this.address;
  }

  /**
   * Starts serving when a port is set and a route is mounted (nothing to serve otherwise);
   * resolves to the URL, or undefined when it does not listen. Rejects with one clear ConfigError
   * when the port cannot be had.
   */
  async listen(): Promise<string | undefined> {
    if (this.server) return this.address;
    if (this.port === undefined || this.routes.size === 0) return undefined;
    const server = createServer((req, res) => {
      void this.handle(req, res);
    });
    server.requestTimeout = this.requestTimeoutMs;
    server.headersTimeout = Math.min(this.requestTimeoutMs, 20_000);
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err) =>
        reject(
          new ConfigError(
            `the webhook listener cannot listen on ${this.host}:${this.port} (${describeError(err)}): choose another MAGPIE_WEBHOOK_PORT or MAGPIE_WEBHOOK_HOST`,
            { cause: err },
          ),
        ),
      );
      server.listen(this.port, this.host, () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    this.server = server;
    const host = this.host.includes(':') ? `[${this.host}]` : this.host;
    this.address = `http://${host}:${port}`;
    this.logger.info({ url: this.address, paths: this.paths() }, `webhooks at ${this.address}`);
    return this.address;
  }

  /** Stops accepting requests; those in flight get `closeGraceMs` to finish. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const server = this.server;
      if (!server) return;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          server.closeAllConnections();
          resolve();
        }, this.closeGraceMs);
        timer.unref();
      });
      await Promise.race([closed, grace]);
      clearTimeout(timer);
      await closed;
    })();
    return this.closing;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const url = new URL(req.url ?? '/', 'http://webhook.invalid');
      const route = this.routes.get(url.pathname);
      if (!route) return answer(res, { status: 404, body: 'not found' });
      const method = req.method ?? 'GET';
      let body: Buffer = Buffer.alloc(0);
      if (method !== 'GET' && method !== 'HEAD') {
        const read = await readBody(req, route.maxBodyBytes);
        if (read === 'too-large') return answer(res, { status: 413, body: 'body too large' }, true);
        body = read;
      }
      let response: WebhookResponse;
      try {
        response = await route.handler({ method, url, headers: req.headers, body });
      } catch (err) {
        this.logger.warn({ path: url.pathname, err: describeError(err) }, 'webhook handler failed');
        response = { status: 500, body: 'error' };
      }
      // While closing, the connection is not kept for another request.
      answer(res, response, this.closing !== undefined);
    } catch (err) {
      this.logger.debug({ err: describeError(err) }, 'webhook request failed');
      if (!res.headersSent) answer(res, { status: 400, body: 'bad request' }, true);
      else res.destroy();
    }
  }
}

/** The body, or `too-large` as soon as more than `max` bytes were announced or arrived. */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | 'too-large'> {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > max) return Promise.resolve('too-large');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        done();
        resolve('too-large');
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      done();
      resolve(Buffer.concat(chunks));
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/** Writes a plain-text answer; `close` ends the connection after it (the rest of a refused body is not read). */
function answer(res: ServerResponse, response: WebhookResponse, close = false): void {
  const body = response.body ?? '';
  res.writeHead(response.status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(body);
}
