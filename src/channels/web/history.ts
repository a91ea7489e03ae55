/**
 * A web chat's conversation after a reload: the session `web:<chat>` read
 * through the SessionStore, reduced to what the user saw — their own texts
 * and the bot's answers (tool calls, tool results and the prompt's context
 * notes left out) — plus the messages that never enter a session (reminders,
 * heartbeat messages, the message tool's texts, at-once commands such as `/stop`
 * and their answers) from the
 * chat's kept events, each in its place by time; the most recent ones.
 */
import type { DeliveredWebEvent } from '../../bus/web-events.js';
import { routeCommand } from '../../commands/router.js';
import type { SessionEntry, SessionStore } from '../../sessions/types.js';
import { webSessionKey } from './chat-id.js';
import { compareEventIds } from './event-stream.js';

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

/**
 * `lines` with the kept events up to `cursor` that a session never holds (`message`-kind texts,
 * the user's at-once commands such as `/stop`) put in by time, leaving out those from before the chat's last `/new`;
 * the last `limit`.
 */
export function withKeptMessages(
  lines: ChatLine[],
  kept: DeliveredWebEvent[],
  cursor: string | undefined,
  limit = HISTORY_LIMIT,
): ChatLine[] {
  const upToCursor = kept.filter((k) => k.id && cursor && compareEventIds(k.id, cursor) <= 0);
  const renewed = upToCursor.findLastIndex(
    (k) => k.event.type === 'user' && routeCommand(k.event.text).command?.name === 'new',
  );
  const merged = [...lines];
  for (const { event } of upToCursor.slice(renewed + 1)) {
    const line = neverInSession(event);
    if (!line) continue;
    const at = line.at;
    const later = at ? merged.findIndex((l) => l.at !== undefined && l.at > at) : -1;
    if (later < 0) merged.push(line);
    else merged.splice(later, 0, line);
  }
  return merged.slice(-limit);
}

/**
 * The line of a kept event no session holds (`message`-kind texts, and the user's at-once commands
 * such as `/stop`, answered on the way in), else undefined.
 */
function neverInSession(event: DeliveredWebEvent['event']): ChatLine | undefined {
  let role: ChatLine['role'];
  if (event.type === 'message' && event.kind === 'message') role = 'assistant';
  else if (event.type === 'user' && routeCommand(event.text).runs === 'at-once') role = 'user';
  else return undefined;
  return { role, text: event.text, ...(event.at ? { at: event.at } : {}) };
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
