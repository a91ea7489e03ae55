/** The SessionStore port: append-only chat histories with a summary beside them. */
import type { ChatMessage } from '../providers/types.js';

/** A stored message: the chat message plus when it was written. */
export type SessionEntry = ChatMessage & { ts?: string };

export interface SessionInfo {
  key: string;
  messages: number;
  bytes: number;
  updatedAt: Date;
}

export interface SessionStore {
  /** Every stored message of the session, oldest first (a half-written last line is skipped). */
  getHistory(key: string): Promise<SessionEntry[]>;
  /**
   * History to send to the model: the messages after the last summarised point,
   * never starting with an orphaned tool message, never splitting a tool call from its results.
   */
  getContextHistory(key: string): Promise<SessionEntry[]>;
  getSummary(key: string): Promise<string | undefined>;
  /** Appends messages (one line each); cost independent of the session's length. */
  append(key: string, ...messages: ChatMessage[]): Promise<void>;
  /**
   * Replaces the summary and marks every message before `keepFrom` (an index into
   * getHistory) as summarised; the log itself is never rewritten.
   */
  setSummary(key: string, summary: string, keepFrom: number): Promise<void>;
  /** Starts a fresh session; the old log is kept under a new name. Returns that name or undefined. */
  reset(key: string): Promise<string | undefined>;
  list(): Promise<SessionInfo[]>;
}
