/**
 * Makes a stored history safe to send to a model: every tool message follows
 * the assistant message that called it, and every assistant tool call has its results.
 * Deterministic and prefix-stable (what it keeps of a log ending at a turn
 * boundary never changes as the log grows), so each request of a session can
 * begin with the bytes of the one before and be served from a provider's cache.
 */
import type { SessionEntry } from './types.js';

/**
 * Returns a cleaned copy of `messages` (the input is not changed):
 * - tool messages that do not answer a call of the assistant message right before
 *   them (orphans, e.g. at the start after summarising) are dropped;
 * - an assistant message with tool calls whose results are not all present right
 *   after it (a crash mid-turn) is dropped together with its partial results.
 *   Nothing is synthesised: the turn simply disappears from what the model sees,
 *   while the log on disk keeps it.
 *
 * A call and its results are therefore always kept or dropped together.
 */
export function sanitizeHistory(messages: SessionEntry[]): SessionEntry[] {
  const out: SessionEntry[] = [];
  let i = 0;
  while (i < messages.length) {
    const message = messages[i]!;
    if (message.role === 'tool') {
      i += 1; // orphan: no assistant call right before it
      continue;
    }
    if (message.role !== 'assistant' || !message.toolCalls || message.toolCalls.length === 0) {
      out.push(message);
      i += 1;
      continue;
    }
    let end = i + 1;
    while (end < messages.length && messages[end]!.role === 'tool') end += 1;
    const results = messages.slice(i + 1, end);
    const wanted = new Set(message.toolCalls.map((call) => call.id));
    const answered = new Set<string>();
    const kept: SessionEntry[] = [];
    for (const result of results) {
      if (result.role !== 'tool') continue;
      if (wanted.has(result.toolCallId) && !answered.has(result.toolCallId)) {
        answered.add(result.toolCallId);
        kept.push(result);
      }
    }
    if (answered.size === wanted.size) out.push(message, ...kept);
    i = end;
  }
  return out;
}
