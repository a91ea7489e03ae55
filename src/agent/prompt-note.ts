/**
 * The note a user message carries in the session log for the prompt layout:
 * the short context block sent after its text (the time, who wrote it, memory
 * written since the model last saw it), what the model knows of memory once
 * it has read it, and — on the message that starts a session's view of
 * memory — the snapshot the system prompt shows. Stored with the message and
 * replayed as stored, so a later request repeats the earlier one's bytes.
 */
import type { ChatMessage } from '../providers/types.js';
import type { MemoryMarks } from './memory-view.js';

/** What a stored user message carries beside its content (field `prompt` of the log entry). */
export interface PromptNote {
  /** The context block sent after the message's own text, exactly as first sent. */
  context: string;
  /** The memory files as the model knows them after reading this message. */
  memory: MemoryMarks;
  /** The memory section of the system prompt, on the message that took the snapshot. */
  snapshot?: string;
}

/** The note of a stored or in-turn message, or undefined (malformed notes are ignored). */
export function noteOf(message: ChatMessage): PromptNote | undefined {
  if (message.role !== 'user') return undefined;
  const note = (message as { prompt?: unknown }).prompt;
  if (!note || typeof note !== 'object') return undefined;
  const { context, memory, snapshot } = note as Record<string, unknown>;
  if (typeof context !== 'string' || !memory || typeof memory !== 'object') return undefined;
  if (snapshot !== undefined && typeof snapshot !== 'string') return undefined;
  return note as PromptNote;
}

/** The message with `note` attached (a copy). */
export function withNote<M extends ChatMessage>(message: M, note: PromptNote): M {
  return { ...message, prompt: note };
}

/**
 * The memory snapshot the model was shown for this view of the session: the
 * first message carrying one (after a compaction folds it away, the next
 * user message takes a new one).
 */
export function snapshotIn(messages: readonly ChatMessage[]): string | undefined {
  for (const message of messages) {
    const snapshot = noteOf(message)?.snapshot;
    if (snapshot !== undefined) return snapshot;
  }
  return undefined;
}

/**
 * What the model knows of memory after `messages`: the marks of the last note
 * from the snapshot on; undefined when no message carries a snapshot (the
 * next note must take one).
 */
export function knownMemory(messages: readonly ChatMessage[]): MemoryMarks | undefined {
  let known: MemoryMarks | undefined;
  for (const message of messages) {
    const note = noteOf(message);
    if (!note) continue;
    if (note.snapshot !== undefined) known = note.memory;
    else if (known) known = note.memory;
  }
  return known;
}

/**
 * A message as the model receives it: only the fields of its role (no
 * timestamps, inbound ids, notes or usage from the log), a user message's
 * context block after its text.
 */
export function forRequest(message: ChatMessage): ChatMessage {
  switch (message.role) {
    case 'system':
      return message.staticChars === undefined
        ? { role: 'system', content: message.content }
        : { role: 'system', content: message.content, staticChars: message.staticChars };
    case 'user': {
      const context = noteOf(message)?.context;
      const content = context ? withContext(message.content, context) : message.content;
      return message.name === undefined
        ? { role: 'user', content }
        : { role: 'user', content, name: message.name };
    }
    case 'assistant':
      return message.toolCalls && message.toolCalls.length > 0
        ? { role: 'assistant', content: message.content, toolCalls: message.toolCalls }
        : { role: 'assistant', content: message.content };
    case 'tool':
      return message.name === undefined
        ? { role: 'tool', toolCallId: message.toolCallId, content: message.content }
        : { role: 'tool', toolCallId: message.toolCallId, name: message.name, content: message.content };
  }
}

function withContext(content: string | Extract<ChatMessage, { role: 'user' }>['content'], context: string) {
  if (typeof content === 'string') return content === '' ? context : `${content}\n\n${context}`;
  return [...content, { type: 'text' as const, text: context }];
}
