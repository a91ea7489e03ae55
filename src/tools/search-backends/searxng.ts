/**
 * SearXNG (self-hosted metasearch): `GET {SEARXNG_URL}/search?q=…&format=json`.
 * The instance must allow the json format (search.formats in settings.yml),
 * else it answers 403. A URL with user:password becomes a Basic
 * Authorization header (fetch refuses credentials in URLs).
 */
import { joinUrl } from './http.js';
import { contentResults, jsonBackend } from './json-backend.js';
import type { BackendHttpOptions, SearchBackend } from './types.js';

export interface SearxngOptions extends BackendHttpOptions {
  /** The instance's root, e.g. http://127.0.0.1:8888 or https://host/searxng. */
  url: string;
}

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
  return jsonBackend({
    label: 'SearXNG',
    timeoutMs: options.timeoutMs,
    request(query) {
      const url = joinUrl(root.href, 'search');
      url.searchParams.set('q', query);
      url.searchParams.set('format', 'json');
      return {
        url,
        init: { headers },
        authFix: 'check the user:password in SEARXNG_URL',
        forbiddenFix: 'enable the JSON API: add "json" to search.formats in its settings.yml',
      };
    },
    hits: contentResults,
  });
}
