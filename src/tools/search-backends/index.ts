/**
 * Picks the web search backend the config names (MAGPIE_WEB_SEARCH, or the
 * first of Brave, Tavily, SearXNG that is configured). None: no web_search.
 */
import type { Config } from '../../config/index.js';
import { createBraveBackend } from './brave.js';
import { createSearxngBackend } from './searxng.js';
import { createTavilyBackend } from './tavily.js';
import type { BackendHttpOptions, SearchBackend } from './types.js';

export type { SearchBackend, SearchHit } from './types.js';

/** The configured backend, or undefined when none is. */
export function searchBackendFor(
  search: Config['search'],
  options: BackendHttpOptions = {},
): SearchBackend | undefined {
  switch (search.backend) {
    case 'brave':
      return search.brave.apiKey
        ? createBraveBackend({ apiKey: search.brave.apiKey, apiRoot: search.brave.apiRoot, ...options })
        : undefined;
    case 'tavily':
      return search.tavily.apiKey
        ? createTavilyBackend({ apiKey: search.tavily.apiKey, apiRoot: search.tavily.apiRoot, ...options })
        : undefined;
    case 'searxng':
      return search.searxng.url ? createSearxngBackend({ url: search.searxng.url, ...options }) : undefined;
    default:
      return undefined;
  }
}
