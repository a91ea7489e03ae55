/**
 * Brave Search API: `GET {BRAVE_API_ROOT}/res/v1/web/search?q=…&count=…`
 * with the key in `X-Subscription-Token`; hits are `web.results[]` with
 * `title`, `url` and `description` (matches marked with <strong>).
 */
import { z } from 'zod';
import { joinUrl } from './http.js';
import { jsonBackend } from './json-backend.js';
import type { BackendHttpOptions, SearchBackend } from './types.js';

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
  return jsonBackend({
    label: 'Brave Search',
    timeoutMs: options.timeoutMs,
    request(query, count) {
      const url = joinUrl(root, 'res/v1/web/search');
      url.searchParams.set('q', query);
      url.searchParams.set('count', String(count));
      return {
        url,
        init: { headers: { accept: 'application/json', 'x-subscription-token': options.apiKey } },
        authFix: 'check BRAVE_API_KEY in .env',
      };
    },
    hits(body) {
      const results = Answer.safeParse(body).data?.web?.results ?? [];
      return results.map((r) => ({ title: r.title, url: r.url, snippet: r.description }));
    },
  });
}
