/**
 * Tavily: `POST {TAVILY_API_ROOT}/search` with `Authorization: Bearer <key>`
 * and a JSON body `{ query, max_results }`; hits are `results[]` with
 * `title`, `url` and `content`.
 */
import { joinUrl } from './http.js';
import { contentResults, jsonBackend } from './json-backend.js';
import type { BackendHttpOptions, SearchBackend } from './types.js';

export interface TavilyOptions extends BackendHttpOptions {
  apiKey: string;
  /** @defaultValue 'https://api.tavily.com' */
  apiRoot?: string;
}

/** The Tavily backend. */
export function createTavilyBackend(options: TavilyOptions): SearchBackend {
  const root = options.apiRoot ?? 'https://api.tavily.com';
  return jsonBackend({
    label: 'Tavily',
    timeoutMs: options.timeoutMs,
    request: (query, count) => ({
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
      authFix: 'check TAVILY_API_KEY in .env',
    }),
    hits: contentResults,
  });
}
