/**
 * One API root for several fake bots: a loopback HTTP proxy that passes each
 * request, unchanged and streamed both ways (long polls included), to the fake
 * serving the token the request carries — in the path for Telegram
 * (`/bot<token>/…`, `/file/bot<token>/…`), in `Authorization: Bot <token>` for
 * Discord. Several bots of one channel share its API root (TELEGRAM_API_ROOT),
 * as they share api.telegram.org, while each fake stays one bot. A request
 * with no known token gets the platform's 401.
 */
import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface TokenRouter {
  /** The shared root (`http://127.0.0.1:<port>`); paths after it are kept as they are. */
  root: string;
  close(): Promise<void>;
}

/** The token a request carries: Telegram's in the path, else Discord's `Bot` authorization. */
function tokenOf(url: string, authorization: string | undefined): string | undefined {
  const inPath = /^\/(?:file\/)?bot([^/]+)\//.exec(url);
  if (inPath) return decodeURIComponent(inPath[1]!);
  return /^Bot (.+)$/.exec(authorization ?? '')?.[1];
}

/**
 * Starts the router: `targets` maps each token to the root of the fake serving it
 * (`http://127.0.0.1:<port>`, without the fake's own path such as `/api`).
 */
export async function startTokenRouter(targets: Readonly<Record<string, string>>): Promise<TokenRouter> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const token = tokenOf(req.url ?? '/', req.headers.authorization);
    const target = token === undefined ? undefined : targets[token];
    if (!target) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          ok: false,
          error_code: 401,
          description: 'Unauthorized',
          message: '401: Unauthorized',
          code: 0,
        }),
      );
      return;
    }
    const upstream = request(
      new URL(req.url ?? '/', target),
      { method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    // A client that leaves (an aborted long poll) ends the upstream request too.
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    root: `http://127.0.0.1:${port}`,
    async close() {
      for (const s of sockets) s.destroy();
      server.close();
      await once(server, 'close').catch(() => undefined);
    },
  };
}
