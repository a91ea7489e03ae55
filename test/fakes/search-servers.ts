/**
 * A local web search service for tests, on 127.0.0.1, speaking each
 * backend's documented JSON shape: Brave (`GET /res/v1/web/search`,
 * X-Subscription-Token, `web.results[].description`), Tavily (`POST /search`,
 * Bearer key, `results[].content`) and SearXNG (`GET /search?format=json`,
 * `results[].content`). A behaviour decides each answer: results, a status
 * (401, 403, 429 with Retry-After, 500) or a slow answer. Every request is
 * recorded (method, path, query, headers, body).
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export type SearchFlavour = 'brave' | 'tavily' | 'searxng';

export type SearchBehaviour =
  | { kind: 'results'; count?: number }
  | { kind: 'status'; status: number; retryAfter?: number }
  | { kind: 'slow'; delayMs: number };

export interface RecordedSearch {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: unknown;
}

export interface FakeSearchServer {
  /** The API root (Brave, Tavily) or instance URL (SearXNG). */
  root: string;
  requests: RecordedSearch[];
  setBehaviour(behaviour: SearchBehaviour): void;
  close(): Promise<void>;
}

export interface FakeSearchOptions {
  /** The key Brave or Tavily accept, or the user:password SearXNG wants (Basic). Unset: any. */
  key?: string;
  /** A path prefix for SearXNG (an instance under /searxng). @defaultValue '' */
  prefix?: string;
}

/** Hit `i` for `query`, with HTML in the snippet the way Brave marks matches. */
function hit(query: string, i: number): { title: string; url: string; snippet: string } {
  return {
    title: `Result ${i + 1} about ${query}`,
    url: `https://example.org/${i + 1}`,
    snippet: `Snippet <strong>${query}</strong> number ${i + 1} &amp; more`,
  };
}

/** Starts a fake of one backend. */
export async function startFakeSearch(
  flavour: SearchFlavour,
  options: FakeSearchOptions = {},
): Promise<FakeSearchServer> {
  let behaviour: SearchBehaviour = { kind: 'results' };
  const requests: RecordedSearch[] = [];
  const prefix = options.prefix ?? '';
  const pending = new Set<NodeJS.Timeout>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text ? JSON.parse(text) : undefined;
      requests.push({
        method: req.method ?? '',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body,
      });
      const send = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(payload));
      };
      const expected = { brave: '/res/v1/web/search', tavily: '/search', searxng: `${prefix}/search` }[
        flavour
      ];
      if (url.pathname !== expected) return send(404, { error: 'not found' });
      if (options.key !== undefined && !authorised(flavour, req.headers, options.key)) {
        return send(401, { error: 'unauthorised' });
      }
      if (flavour === 'searxng' && url.searchParams.get('format') !== 'json')
        return send(403, { error: 'format' });
      if (behaviour.kind === 'status') {
        const headers: Record<string, string> =
          behaviour.retryAfter === undefined ? {} : { 'retry-after': String(behaviour.retryAfter) };
        return send(behaviour.status, { error: `status ${behaviour.status}` }, headers);
      }
      const query = flavour === 'tavily' ? String(body?.query ?? '') : (url.searchParams.get('q') ?? '');
      const answer = () => {
        const count =
          behaviour.kind === 'results' && behaviour.count !== undefined
            ? behaviour.count
            : flavour === 'brave'
              ? Number(url.searchParams.get('count') ?? 20)
              : flavour === 'tavily'
                ? Number(body?.max_results ?? 5)
                : 20;
        const hits = Array.from({ length: count }, (_, i) => hit(query, i));
        if (flavour === 'brave') {
          send(200, {
            type: 'search',
            query: { original: query },
            web: {
              type: 'search',
              results: hits.map((h) => ({ title: h.title, url: h.url, description: h.snippet })),
            },
          });
        } else {
          send(200, {
            query,
            results: hits.map((h) => ({
              title: h.title,
              url: h.url,
              content: h.snippet.replace(/<[^>]+>/g, ''),
            })),
          });
        }
      };
      if (behaviour.kind === 'slow') {
        const timer = setTimeout(() => {
          pending.delete(timer);
          if (!res.destroyed) answer();
        }, behaviour.delayMs);
        pending.add(timer);
        return;
      }
      answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    root: `http://127.0.0.1:${port}${flavour === 'searxng' ? prefix : ''}`,
    requests,
    setBehaviour(next) {
      behaviour = next;
    },
    async close() {
      for (const timer of pending) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function authorised(flavour: SearchFlavour, headers: IncomingHttpHeaders, key: string): boolean {
  if (flavour === 'brave') return headers['x-subscription-token'] === key;
  if (flavour === 'tavily') return headers.authorization === `Bearer ${key}`;
  return headers.authorization === `Basic ${Buffer.from(key).toString('base64')}`;
}
