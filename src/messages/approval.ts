/**
 * An approval question waiting for a person, as the bus keeps it: the call
 * the turn parked, who may answer, and what the turn needs to go on
 * (its request, the calls still to ask about, its iteration). Shared by the
 * agent (which parks and resumes), the bus (which stores and decides) and
 * the channels' intake (which answers). Imports nothing of magpie's.
 */
import { z } from 'zod';

/** MAGPIE_APPROVAL: never ask, ask before risky calls, or before every call that is not read-only. */
export const APPROVAL_MODES = ['off', 'risky', 'all'] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];

/** How a question was settled. */
export const APPROVAL_STATES = ['waiting', 'allowed', 'denied', 'timeout', 'cancelled', 'running'] as const;
export type ApprovalState = (typeof APPROVAL_STATES)[number];

export const ParkedCallSchema = z.object({
  id: z.string(),
  name: z.string(),
  arguments: z.string(),
});
export type ParkedCall = z.infer<typeof ParkedCallSchema>;

/** An "always allow" rule of one chat: a tool, and for exec a command prefix (`git push`). */
export const ApprovalRuleSchema = z.object({
  tool: z.string().min(1),
  prefix: z.string().min(1).optional(),
});
export type ApprovalRule = z.infer<typeof ApprovalRuleSchema>;

/** What a parked turn needs to be rebuilt on any worker (a TurnRequest without its messages). */
export const ParkedRequestSchema = z.object({
  channel: z.string(),
  chatId: z.string(),
  threadId: z.string().optional(),
  sessionKey: z.string(),
  senderName: z.string().optional(),
  isGroup: z.boolean().optional(),
  ids: z.array(z.string()),
  noHistory: z.boolean().optional(),
});
export type ParkedRequest = z.infer<typeof ParkedRequestSchema>;

export const PendingApprovalSchema = z.object({
  /** What the person types (`/approve K7QF2`): single-use, bound to this chat and call. */
  code: z.string().regex(/^[A-Z2-9]{5}$/),
  sessionKey: z.string(),
  /** The chat the question was asked in (the owner's last chat for heartbeat and cron turns). */
  target: z.object({ channel: z.string(), chatId: z.string(), threadId: z.string().optional() }),
  /** Sender ids that may answer; empty: anyone the chat's channel lets in. */
  approvers: z.array(z.string()),
  call: ParkedCallSchema,
  /** e.g. "run `git push origin main` in the workspace". */
  summary: z.string(),
  /** The rule "Always allow" would store; absent: none is offered. */
  rule: ApprovalRuleSchema.optional(),
  /** The turn had read untrusted text (a web page, search results, an MCP answer) before asking. */
  tainted: z.boolean(),
  /** What untrusted text it read ("a web page"), for the question and the resumed turn. */
  taint: z.string().optional(),
  askedAt: z.string(),
  expiresAt: z.string(),
  state: z.enum(APPROVAL_STATES),
  /** Who settled it (a sender's name or id; `timeout`; `/stop`). */
  decidedBy: z.string().optional(),
  /** Allowed with "always": the rule was stored. */
  always: z.boolean().optional(),
  /** The question was sent to its chat. */
  asked: z.boolean().optional(),
  /** The parked turn's span (W3C trace context), so the resumed turn continues its trace. */
  trace: z.object({ traceparent: z.string().max(64), tracestate: z.string().max(512).optional() }).optional(),
  /** The turn, parked: its request, the calls after this one still to ask about, where it was. */
  parked: z.object({
    request: ParkedRequestSchema,
    rest: z.array(ParkedCallSchema),
    iteration: z.number().int().nonnegative(),
    /** Platform message id the reply should answer. */
    replyTo: z.string().optional(),
  }),
});
export type PendingApproval = z.infer<typeof PendingApprovalSchema>;

/** The id a resumed turn's messages and reply derive from: the parked turn's, and the question's code. */
export function resumedTurnId(pending: PendingApproval): string {
  return `${pending.parked.request.ids[0] ?? pending.sessionKey}~${pending.code}`;
}

/** An answer typed or pressed in a chat: `/approve CODE`, `/approve CODE always`, `/deny CODE`. */
export interface ApprovalAnswer {
  code: string;
  decision: 'allow' | 'always' | 'deny';
  senderId: string;
  /** Shown as who answered. */
  senderName: string;
  /** The inbound message's id: a platform delivering the same press or message again is answered once. */
  messageId?: string;
}

/** What became of an answer. */
export type AnswerOutcome =
  | { kind: 'decided'; pending: PendingApproval }
  | { kind: 'none' }
  | { kind: 'already'; state: ApprovalState; by: string | undefined }
  | { kind: 'not-allowed' }
  | { kind: 'expired' }
  /** The same message (press) again: it was answered the first time; nothing more is said. */
  | { kind: 'repeat' };
