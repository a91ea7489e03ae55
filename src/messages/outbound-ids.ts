/**
 * Deterministic outbound ids, the one scheme for everything a turn sends. A
 * turn always starts at the head of its session's mailbox and the head leaves
 * only after the reply is queued, so the head message's id names the turn: a
 * redone turn (after a crash) gets the same ids, and BullMQ ignores a job id it
 * already holds — no second reply, no second message-tool message. Live reply
 * previews are keyed by the same turn id. A redone turn that finds its first
 * messages answered by an earlier attempt (stored in the session) sends those
 * answers again under their ids, and names its new reply and sends by the
 * first message it newly answers (`TurnResult.answersFrom`).
 */
import { shortHash } from './short-hash.js';

/** The id of a turn: a hash of its session and first inbound message id. */
export function turnId(sessionKey: string, firstMessageId: string): string {
  return shortHash(`${sessionKey}\n${firstMessageId}`);
}

/** The final reply of a turn. */
export function replyId(turn: string): string {
  return `r-${turn}`;
}

/**
 * The spoken form of a turn's reply (src/voice): a second outbound with its own id, so a redone
 * turn — or one whose worker died after the text went out — sends the voice once. (BullMQ job ids
 * may not hold `:`.)
 */
export function voiceId(turn: string): string {
  return `${replyId(turn)}-voice`;
}

/** The n-th (1-based) message the message tool sent during a turn. */
export function messageId(turn: string, n: number): string {
  return `m-${turn}-${n}`;
}

/** The n-th (1-based) text a tool result asked to show the user (`forUser`) during a turn. */
export function userTextId(turn: string, n: number): string {
  return `u-${turn}-${n}`;
}

/** The error reply of a failed turn. */
export function errorId(turn: string): string {
  return `e-${turn}`;
}
