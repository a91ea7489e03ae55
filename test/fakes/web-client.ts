/**
 * A web chat client for tests, speaking what the chat page speaks: plain
 * HTTP requests to the dashboard (any Host, Origin or cookie a test wants to
 * forge) and a Server-Sent Events reader of `/chat/events` that keeps every
 * event it received and resumes with `Last-Event-ID` like EventSource.
 */
import http from 'node:http';
import { sessionCookieName, sessionValue } from '../../src/ops/dashboard-auth.js';
import { waitFor } from './wait-for.js';

/** An HTTP answer. */
export interface WebAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * One request to `http://127.0.0.1:<port><path>`; `Host` defaults to `127.0.0.1:<port>`.
 * `localAddress` (e.g. 127.0.0.2, any loopback address on Linux) makes it come from another client.
 */
export function webRequest(
  port: number,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; localAddress?: string } = {},
): Promise<WebAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        ...(options.localAddress ? { localAddress: options.localAddress } : {}),
        headers: { host: `127.0.0.1:${port}`, ...options.headers },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The cookie header a browser signed in to the dashboard on `port` sends. */
export function signedInCookie(port: number, token: string): string {
  return `${sessionCookieName(port)}=${sessionValue(token)}`;
}

/** The headers of a same-origin JSON POST from the chat page. */
export function pageHeaders(port: number, token: string): Record<string, string> {
  return {
    cookie: signedInCookie(port, token),
    'content-type': 'application/json',
    origin: `http://127.0.0.1:${port}`,
    'sec-fetch-site': 'same-origin',
  };
}

/** One event as received. */
export interface ReceivedEvent {
  id?: string;
  event: string;
  data: unknown;
}

/** An open `/chat/events` stream. */
export interface EventReader {
  readonly status: number;
  /** Every event received so far (comments and `retry:` left out). */
  readonly events: ReceivedEvent[];
  /** How many heartbeat comments arrived. */
  readonly comments: number;
  /** The last event id received (what EventSource would send as Last-Event-ID). */
  readonly lastId: string | undefined;
  /** Resolves with the events once `check` holds for them. */
  until(
    check: (events: ReceivedEvent[]) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<ReceivedEvent[]>;
  close(): void;
}

/** Opens the chat's event stream; resolves once the response head arrived. */
export function openEvents(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<EventReader> {
  return new Promise((resolve, reject) => {
    const events: ReceivedEvent[] = [];
    let comments = 0;
    let lastId: string | undefined;
    let closed = false;
    let broken: Error | undefined;
    const req = http.request(
      { host: '127.0.0.1', port, path, headers: { host: `127.0.0.1:${port}`, ...headers } },
      (res) => {
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let end = buffer.indexOf('\n\n');
          while (end >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            end = buffer.indexOf('\n\n');
            const fields = new Map<string, string>();
            for (const line of frame.split('\n')) {
              if (line.startsWith(':')) comments += 1;
              const colon = line.indexOf(':');
              if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).replace(/^ /, ''));
            }
            const data = fields.get('data');
            if (data === undefined) continue;
            const id = fields.get('id');
            if (id !== undefined) lastId = id;
            events.push({
              ...(id !== undefined ? { id } : {}),
              event: fields.get('event') ?? 'message',
              data: JSON.parse(data),
            });
          }
        });
        // A stream that breaks without close() (the server went away) fails the next until().
        res.on('error', (err) => {
          if (!closed) broken = err;
        });
        resolve({
          status: res.statusCode ?? 0,
          events,
          get comments() {
            return comments;
          },
          get lastId() {
            return lastId;
          },
          until: (check, what, timeoutMs = 10_000) =>
            waitFor(
              () => {
                if (broken) throw broken;
                return check(events) && events;
              },
              timeoutMs,
              what,
            ),
          close: () => {
            closed = true;
            req.destroy();
          },
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
