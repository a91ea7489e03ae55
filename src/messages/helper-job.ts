/**
 * Helper agents on the bus: what a spawned helper's job carries on the
 * `helpers` queue, where it reports, and the record `magpie status` shows of a
 * running helper.
 */
import { z } from 'zod';

/** The chat a helper reports to (`metadata.origin` of its result message). */
export const HelperOriginSchema = z.object({
  channel: z.string().min(1),
  chatId: z.string().min(1),
  threadId: z.string().min(1).optional(),
  /** The origin session: the result is queued in its mailbox, behind that chat's turns. */
  sessionKey: z.string().min(1),
});
export type HelperOrigin = z.infer<typeof HelperOriginSchema>;

/** The payload of a helper job on the `helpers` queue. */
export const HelperJobSchema = z.object({
  /** Also the BullMQ job id and part of the result message id. */
  id: z.string().regex(/^[a-z0-9-]+$/),
  task: z.string().min(1),
  label: z.string().min(1).optional(),
  origin: HelperOriginSchema,
  /** Delegation depth the helper runs at (1 for a helper spawned by a user's turn). */
  depth: z.number().int().min(1),
  createdAt: z.string(),
  /** The spawning turn's span (W3C trace context), when tracing is on: the helper's span is its child. */
  trace: z.object({ traceparent: z.string().max(64), tracestate: z.string().max(512).optional() }).optional(),
});
export type HelperJob = z.infer<typeof HelperJobSchema>;

/** A running helper as `magpie status` shows it (one field of the `<prefix>:helpers` hash, JSON). */
export interface HelperRecord {
  id: string;
  label?: string;
  kind: 'spawn' | 'subagent';
  origin: { channel: string; chatId: string; threadId?: string; sessionKey: string };
  /** The task's first 200 characters. */
  task: string;
  startedAt: string;
  /** Process id of the worker running it. */
  pid: number;
}
