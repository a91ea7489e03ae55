/**
 * Web chat ids: one per browser (random, kept in the page's localStorage) or
 * a named chat (`/chat?name=work`). An id becomes part of a session key, a
 * Redis key and a file name, so only letters, digits, `_` and `-` pass, at
 * most 64 of them.
 */

/** What a web chat id (and a client's message id) may be. */
export const CHAT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Whether `value` is a valid web chat id. */
export function isChatId(value: unknown): value is string {
  return typeof value === 'string' && CHAT_ID_PATTERN.test(value);
}

/** The session a web chat's conversation is kept under: `web:<chat>`. */
export function webSessionKey(chat: string): string {
  return `web:${chat}`;
}
