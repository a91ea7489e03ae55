/**
 * memory_search: ranked full-text search over MEMORY.md, every daily note
 * and every past conversation, so the assistant can answer about things
 * that are no longer in its prompt ("when did Marta move?"). It reads only
 * the memory index (see src/memory/search), never a path the model names.
 */
import { z } from 'zod';
import { describeError } from '../errors/index.js';
import { parseDay } from '../memory/search/dates.js';
import { formatForModel } from '../memory/search/format.js';
import { DEFAULT_LIMIT, MAX_LIMIT, type SearchOptions, type SearchResult } from '../memory/search/search.js';
import { fail, ok, type Tool } from './types.js';

/** What the tool needs of the index (MemoryIndex implements it). */
export interface MemorySearcher {
  search(query: string, options?: SearchOptions): Promise<SearchResult>;
}

const parameters = z.object({
  query: z
    .string()
    .min(1)
    .max(500)
    .describe('Distinctive words to look for: names, places, things, numbers (e.g. "Marta Coimbra moved")'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_LIMIT)
    .optional()
    .describe(`How many results at most; default ${DEFAULT_LIMIT}`),
  since: z.string().optional().describe('Only notes and messages from this day on, YYYY-MM-DD'),
  until: z.string().optional().describe('Only notes and messages up to this day (inclusive), YYYY-MM-DD'),
});

/** The memory_search tool over an index. */
export function createMemorySearchTool(index: MemorySearcher): Tool<typeof parameters> {
  return {
    name: 'memory_search',
    description:
      'Search memory/MEMORY.md, every daily note and every past conversation (ranked full-text, and by meaning ' +
      'when an embedding model is set; the result says when it searched words only); use it for past ' +
      'events, people, places, dates, numbers and decisions that are not in your prompt.\n' +
      'Your prompt holds MEMORY.md and only the last few days of notes; everything older, and what the user and ' +
      'you said in earlier chats, is found here — search before saying you do not know. English word forms ' +
      'match ("moved" finds "move"); give a few distinctive words (names, places, things) rather than a ' +
      'sentence. since/until (YYYY-MM-DD) narrow by date. Each result gives its file and line, the date, and ' +
      'who said it.',
    parameters,
    async execute({ query, limit, since, until }, ctx) {
      let filters: { since?: number; until?: number };
      try {
        filters = {
          ...(since ? { since: parseDay(since, 'since') } : {}),
          ...(until ? { until: parseDay(until, 'until') } : {}),
        };
      } catch (err) {
        return fail(describeError(err));
      }
      try {
        const result = await index.search(query, { limit, ...filters, signal: ctx.signal });
        return ok(formatForModel(query, result, filters));
      } catch (err) {
        // Cancellation included: the registry answers an aborted call with its own result.
        return fail(`memory search failed: ${describeError(err)}`);
      }
    },
  };
}
