/**
 * SearXNG (self-hosted metasearch): `GET {SEARXNG_URL}/search?q=…&format=json`.
 * The instance must allow the json format (search.formats in settings.yml),
 * else it answers 403. A URL with user:password becomes a Basic
 * Authorization header (fetch refuses credentials in URLs).
 */
import { z } from 'zod';
import { joinUrl, plainSnippet, requestJson } from './http.js';
import type { BackendHttpOptions, SearchBackend, SearchHit } from './types.js';

export interface SearxngOptions extends BackendHttpOptions {
  /** The instance's root, e.g. http://127.0.0.1:8888 or https://host/searxng. */
  url: string;
}

const Answer = z.object({
  results: z.array(z.looseObject({ title: z.unknown(), url: z.unknown(), content: z.unknown() })).default([]),
});

/** The SearXNG backend. */
export function createSearxngBackend(options: SearxngOptions): SearchBackend {
  const root = new URL(options.url);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (root.username || root.password) {
    const user = decodeURIComponent(root.username);
    const password = decodeURIComponent(root.password);
    headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    root.username = '';
    root.password = '';
  }
  const timeoutMs = options.timeoutMs ?? 15_000;
  return {
    label: 'SearXNG',
    async search(query, count, signal): Promise<SearchHit[]> {
      const url = joinUrl(root.href, 'search');
      url.searchParams.set('q', query);
      url.searchParams.set('format', 'json');
      const body = await requestJson({
        label: 'SearXNG',
        url,
        init: { headers },
        timeoutMs,
        signal,
        authFix: 'check the user:password in SEARXNG_URL',
        forbiddenFix: 'enable the JSON API: add "json" to search.formats in its settings.yml',
      });
      const results = Answer.safeParse(body).data?.results ?? [];
      return results.slice(0, count).map((r) => ({
        title: plainSnippet(r.title),
        url: typeof r.url === 'string' ? r.url : '',
        snippet: plainSnippet(r.content),
      }));
    },
  };
}
