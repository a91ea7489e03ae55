/**
 * What Brave, Tavily and SearXNG share: one JSON request per search (through
 * requestJson, with its time limit and errors for the model), then the first
 * `count` hits of the answer as plain-text SearchHits. A backend says only how
 * it asks and where its answer keeps the hits.
 */
import { z } from 'zod';
import { plainSnippet, requestJson, type SearchRequest } from './http.js';
import type { BackendHttpOptions, SearchBackend, SearchHit } from './types.js';

/** One hit as a service sends it: a title, a URL and an extract, of any type. */
export interface RawHit {
  title: unknown;
  url: unknown;
  snippet: unknown;
}

/** A search service that answers JSON. */
export interface JsonBackendDefinition extends BackendHttpOptions {
  /** Its name as people know it ("Brave Search"). */
  label: string;
  /** The request for one search: where, how, and what to fix when it is refused. */
  request(query: string, count: number): Pick<SearchRequest, 'url' | 'init' | 'authFix' | 'forbiddenFix'>;
  /** The hits of an answer's body, best first; none when the body is not as expected. */
  hits(body: unknown): RawHit[];
}

/** A search's time limit when the backend's options give none. */
const DEFAULT_TIMEOUT_MS = 15_000;

/**
 * The `results[]` answer of Tavily and SearXNG, each hit with `title`, `url`
 * and `content`, as RawHits.
 */
export function contentResults(body: unknown): RawHit[] {
  const results = ContentAnswer.safeParse(body).data?.results ?? [];
  return results.map((r) => ({ title: r.title, url: r.url, snippet: r.content }));
}

const ContentAnswer = z.object({
  results: z.array(z.looseObject({ title: z.unknown(), url: z.unknown(), content: z.unknown() })).default([]),
});

/**
 * A SearchBackend for a service that answers JSON.
 *
 * @example
 * jsonBackend({ label: 'Tavily', request: (q, n) => ({ url, init, authFix }), hits: contentResults });
 */
export function jsonBackend(definition: JsonBackendDefinition): SearchBackend {
  const timeoutMs = definition.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return {
    label: definition.label,
    async search(query, count, signal): Promise<SearchHit[]> {
      const body = await requestJson({
        label: definition.label,
        timeoutMs,
        signal,
        ...definition.request(query, count),
      });
      return definition
        .hits(body)
        .slice(0, count)
        .map((r) => ({
          title: plainSnippet(r.title),
          url: typeof r.url === 'string' ? r.url : '',
          snippet: plainSnippet(r.snippet),
        }));
    },
  };
}
