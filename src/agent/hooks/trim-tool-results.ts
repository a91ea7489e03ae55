/**
 * Trims oversized tool results in the request sent to the model (head + tail
 * + a marker); the session log keeps them whole. A 200 kB web page read once
 * should not be paid for on every later call of the session.
 */
import type { ChatMessage } from '../../providers/types.js';
import type { IterationHook } from './types.js';

export interface TrimToolResultsOptions {
  /** Tool results longer than this are trimmed. @defaultValue 8_000 */
  maxChars?: number;
}

/** The marker left where a tool result was cut. */
export function trimMarker(removed: number): string {
  return `\n\n[… ${removed} characters of this tool result trimmed from the request; the session log keeps it whole …]\n\n`;
}

/** `text` cut to about `maxChars`: its head (70%) and tail (20%) around a marker. */
export function trimText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const head = Math.floor(maxChars * 0.7);
  const tail = Math.floor(maxChars * 0.2);
  return text.slice(0, head) + trimMarker(text.length - head - tail) + text.slice(text.length - tail);
}

/** The hook: tool messages over `maxChars` are replaced by trimmed copies in the request. */
export function trimToolResults(options: TrimToolResultsOptions = {}): IterationHook {
  const maxChars = options.maxChars ?? 8_000;
  if (!Number.isInteger(maxChars) || maxChars < 100) {
    throw new RangeError(`trimToolResults: maxChars must be a whole number ≥ 100, not ${maxChars}`);
  }
  return {
    name: 'trim-tool-results',
    beforeCall({ messages, log }) {
      let trimmed = 0;
      const out = messages.map((m): ChatMessage => {
        if (m.role !== 'tool' || m.content.length <= maxChars) return m;
        trimmed += 1;
        return { ...m, content: trimText(m.content, maxChars) };
      });
      if (trimmed === 0) return messages;
      log.debug({ trimmed, maxChars }, 'oversized tool results trimmed in the request');
      return out;
    },
  };
}
