/**
 * The token totals a session log holds: each turn's final assistant message
 * carries the turn's counts in its `usage` field. The counts themselves, and
 * their cost, are in src/messages/token-counts.ts.
 */
import { addCounts, type TokenCounts, zeroCounts } from '../messages/token-counts.js';
import type { ChatMessage } from '../providers/types.js';

/** The turn counts an entry of a session log carries, if any. */
export function usageOf(entry: ChatMessage): TokenCounts | undefined {
  if (entry.role !== 'assistant') return undefined;
  const usage = (entry as { usage?: unknown }).usage;
  if (!usage || typeof usage !== 'object') return undefined;
  const u = usage as Record<string, unknown>;
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0);
  return {
    promptTokens: num(u.promptTokens),
    cachedTokens: num(u.cachedTokens),
    cacheWriteTokens: num(u.cacheWriteTokens),
    completionTokens: num(u.completionTokens),
  };
}

/** The sum of the turn counts in a session log; undefined when no entry carries any. */
export function usageOfEntries(entries: readonly ChatMessage[]): TokenCounts | undefined {
  let total: TokenCounts | undefined;
  for (const entry of entries) {
    const usage = usageOf(entry);
    if (usage) total = addCounts(total ?? zeroCounts(), usage);
  }
  return total;
}
