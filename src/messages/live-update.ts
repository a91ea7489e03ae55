/**
 * LiveUpdate: one snapshot of a reply being written. While a turn runs, the
 * worker publishes snapshots of the answer (the Redis side is `bus/live.ts`);
 * the gateway owning the channel shows them. A snapshot carries the whole text
 * so far, so one lost in a reconnect costs nothing: the next one, or the final
 * reply on the outbound queue, covers it.
 */
import { z } from 'zod';

/** Longest text one snapshot carries (longer answers show their first part until the final reply). */
export const LIVE_TEXT_LIMIT = 64 * 1024;

export const LiveUpdateSchema = z.object({
  /** The turn's id (outbound-ids.ts): the same for a turn redone after a crash. */
  turn: z.string().min(1),
  channel: z.string().min(1),
  chatId: z.string().min(1),
  threadId: z.string().min(1).optional(),
  /** Platform message id the answer replies to. */
  replyTo: z.string().optional(),
  /** The answer so far (Markdown source, possibly cut mid-construct): the current LLM iteration's text. */
  text: z.string().max(LIVE_TEXT_LIMIT),
  /** What the turn is doing while tools run, e.g. "running: web_search …"; absent while text flows. */
  progress: z.string().max(200).optional(),
  /** Increases with every snapshot of one attempt of the turn. */
  seq: z.number().int().nonnegative(),
  /** The turn's routing metadata (e.g. the CLI's reply addresses). */
  metadata: z.record(z.string(), z.unknown()).default({}),
});
export type LiveUpdate = z.infer<typeof LiveUpdateSchema>;
export type LiveUpdateInput = z.input<typeof LiveUpdateSchema>;

/** What a channel showed of one turn's live reply, kept in Redis so a redone turn or another gateway finds it. */
export interface LiveRecord {
  /** Platform message ids of the preview's parts, in order. */
  messageIds: string[];
  /** Set once the final reply was shown: later snapshots of the turn are ignored. */
  done?: boolean;
  /** A hash of the final reply's content once shown (a retried final is then a no-op). */
  finalHash?: string;
}
