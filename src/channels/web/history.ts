/**
 * A web chat's conversation after a reload: the session `web:<chat>` read
 * through the SessionStore, reduced to what the user saw — their own texts
 * and the bot's answers (tool calls, tool results and the prompt's context
 * notes left out), the most recent ones.
 */
import type { SessionEntry, SessionStore } from '../../sessions/types.js';
import { webSessionKey } from './chat-id.js';

/** One line of the conversation as the page shows it. */
export interface ChatLine {
  role: 'user' | 'assistant';
  text: string;
  /** When it was written (ISO), when the log knows. */
  at?: string;
}

/** Messages a history holds at most. */
export const HISTORY_LIMIT = 100;

/** The last `limit` user and assistant texts of a web chat's session, oldest first. */
export async function chatHistory(
  sessions: Pick<SessionStore, 'getHistory'>,
  chat: string,
  limit = HISTORY_LIMIT,
): Promise<ChatLine[]> {
  const lines: ChatLine[] = [];
  for (const entry of await sessions.getHistory(webSessionKey(chat))) {
    const line = chatLine(entry);
    if (line) lines.push(line);
  }
  return lines.slice(-limit);
}

function chatLine(entry: SessionEntry): ChatLine | undefined {
  if (entry.role !== 'user' && entry.role !== 'assistant') return undefined;
  const text = textOf(entry.content);
  if (!text.trim()) return undefined;
  return { role: entry.role, text, ...(entry.ts ? { at: entry.ts } : {}) };
}

function textOf(content: SessionEntry['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (part.type === 'text' ? part.text : `[${part.type.replace(/_url$/, '')}]`))
    .join('\n');
}
