/**
 * Brave Search API: `GET {BRAVE_API_ROOT}/res/v1/web/search?q=…&count=…`
 * with the key in `X-Subscription-Token`; hits are `web.results[]` with
 * `title`, `url` and `description` (matches marked with <strong>).
 */
import { z } from 'zod';
import { joinUrl, plainSnippet, requestJson } from './http.js';
import type { BackendHttpOptions, SearchBackend, SearchHit } from './types.js';

export interface BraveOptions extends BackendHttpOptions {
  apiKey: string;
  /** @defaultValue 'https://api.search.brave.com' */
  apiRoot?: string;
}

const Answer = z.object({
  web: z
    .object({
      results: z
        .array(z.looseObject({ title: z.unknown(), url: z.unknown(), description: z.unknown() }))
        .default([]),
    })
    .optional(),
});

/** The Brave Search backend. */
export function createBraveBackend(options: BraveOptions): SearchBackend {
  const root = options.apiRoot ?? 'https://api.search.brave.com';
  const timeoutMs = options.timeoutMs ?? 15_000;
  return {
    label: 'Brave Search',
    async search(query, count, signal): Promise<SearchHit[]> {
      const url = joinUrl(root, 'res/v1/web/search');
      url.searchParams.set('q', query);
      url.searchParams.set('count', String(count));
      const body = await requestJson({
        label: 'Brave Search',
        url,
        init: { headers: { accept: 'application/json', 'x-subscription-token': options.apiKey } },
        timeoutMs,
        signal,
        authFix: 'check BRAVE_API_KEY in .env',
      });
      const results = Answer.safeParse(body).data?.web?.results ?? [];
      return results.slice(0, count).map((r) => ({
        title: plainSnippet(r.title),
        url: typeof r.url === 'string' ? r.url : '',
        snippet: plainSnippet(r.description),
      }));
    },
  };
}
