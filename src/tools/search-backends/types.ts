/**
 * The search backend port behind `web_search`: one query in, a ranked list
 * of hits out. Brave, Tavily and SearXNG implement it; a failure is an
 * AppError whose message is safe to show the model (never a key).
 */

/** One search result. */
export interface SearchHit {
  title: string;
  url: string;
  /** A short extract, plain text. */
  snippet: string;
}

/** A configured search service. */
export interface SearchBackend {
  /** Its name as people know it ("Brave Search"). */
  readonly label: string;
  /**
   * At most `count` hits for `query`.
   *
   * @throws AppError TOOL_FAILED or TIMEOUT with a message for the model (401/403, 429, time-outs…).
   */
  search(query: string, count: number, signal: AbortSignal): Promise<SearchHit[]>;
}

/** What every backend's HTTP requests share. */
export interface BackendHttpOptions {
  /** One search's time limit. @defaultValue 15_000 */
  timeoutMs?: number;
}
