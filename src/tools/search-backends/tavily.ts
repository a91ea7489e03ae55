/**
 * Tavily: `POST {TAVILY_API_ROOT}/search` with `Authorization: Bearer <key>`
 * and a JSON body `{ query, max_results }`; hits are `results[]` with
 * `title`, `url` and `content`.
 */
import { z } from 'zod';
import { joinUrl, plainSnippet, requestJson } from './http.js';
import type { BackendHttpOptions, SearchBackend, SearchHit } from './types.js';

export interface TavilyOptions extends BackendHttpOptions {
  apiKey: string;
  /** @defaultValue 'https://api.tavily.com' */
  apiRoot?: string;
}

const Answer = z.object({
  results: z.array(z.looseObject({ title: z.unknown(), url: z.unknown(), content: z.unknown() })).default([]),
});

/** The Tavily backend. */
export function createTavilyBackend(options: TavilyOptions): SearchBackend {
  const root = options.apiRoot ?? 'https://api.tavily.com';
  const timeoutMs = options.timeoutMs ?? 15_000;
  return {
    label: 'Tavily',
    async search(query, count, signal): Promise<SearchHit[]> {
      const body = await requestJson({
        label: 'Tavily',
        url: joinUrl(root, 'search'),
        init: {
          method: 'POST',
          headers: {
            accept: 'application/json',
            'content-type': 'application/json',
            authorization: `Bearer ${options.apiKey}`,
          },
          body: JSON.stringify({ query, max_results: count, search_depth: 'basic' }),
        },
        timeoutMs,
        signal,
        authFix: 'check TAVILY_API_KEY in .env',
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
