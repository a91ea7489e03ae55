/**
 * The worker's side of approval questions, apart from running turns: the
 * question a parked turn leaves (who may answer, when it expires), the
 * message that asks it, what the resumed turn does with the call, and the
 * head a resumed turn is addressed by.
 */

import type { ParkedDecision, TurnResult } from '../agent/types.js';
import { newCode, questionActions, questionText } from '../approvals/question.js';
import type { RedisApprovals } from '../bus/approvals.js';
import { type PendingApproval, resumedTurnId } from '../messages/approval.js';
import { type InboundMessage, isInternalChannel, type OutboundMessageInput } from '../messages/messages.js';
import { shortHash } from '../messages/short-hash.js';

/** MAGPIE_APPROVAL_TIMEOUT's default: 10 minutes. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 600_000;

/** A scheduled task's turn (cron, `mode: agent`): nobody wrote it. */
export function isScheduled(message: InboundMessage): boolean {
  return message.metadata.cron !== undefined;
}

/**
 * The question a turn that parked (`result.parked`) leaves, started by `head`: only that
 * person may answer; a helper's result or a scheduled task: whoever is in that chat (the
 * channel's access rules still apply).
 */
export function pendingApprovalOf(
  head: InboundMessage,
  sessionKey: string,
  result: TurnResult,
  options: { timeoutMs: number; now?: Date },
): PendingApproval {
  const parked = result.parked!;
  const now = options.now ?? new Date();
  const asker = !isInternalChannel(head.channel) && !isScheduled(head) && head.senderId;
  return {
    code: newCode(),
    sessionKey,
    target: {
      channel: result.target.channel,
      chatId: result.target.chatId,
      ...(result.target.threadId ? { threadId: result.target.threadId } : {}),
    },
    approvers: asker ? [asker] : [],
    call: parked.call,
    summary: parked.summary,
    ...(parked.rule ? { rule: parked.rule } : {}),
    tainted: parked.taint !== undefined,
    ...(parked.taint ? { taint: parked.taint } : {}),
    askedAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + options.timeoutMs).toISOString(),
    state: 'waiting',
    parked: {
      request: parked.request,
      rest: parked.rest,
      iteration: parked.iteration,
      ...(head.platformMessageId ? { replyTo: head.platformMessageId } : {}),
    },
  };
}

/** The message that asks `pending` in its chat, with its buttons (the same id however often: it shows once). */
export function questionMessage(
  pending: PendingApproval,
  metadata: Record<string, unknown>,
  completes: { live?: string } = {},
): OutboundMessageInput {
  return {
    ...pending.target,
    id: `ask-${shortHash(`${pending.sessionKey}\0${pending.code}`, 24)}`,
    content: questionText(pending),
    actions: questionActions(pending),
    kind: 'reply',
    metadata: { ...metadata, approval: pending.code },
    ...completes,
  };
}

/** What the resumed turn does with the call: an allowed one is claimed (allowed → running) so it runs once. */
export async function decisionOf(
  approvals: Pick<RedisApprovals, 'move'>,
  pending: PendingApproval,
): Promise<ParkedDecision> {
  switch (pending.state) {
    case 'allowed': {
      const found = await approvals.move(
        pending.sessionKey,
        pending.code,
        'allowed',
        'running',
        pending.decidedBy ?? '',
      );
      return found === 'allowed' ? 'run' : 'interrupted';
    }
    case 'running':
      return 'interrupted';
    case 'denied':
      return 'denied';
    case 'timeout':
      return 'timeout';
    default:
      return 'cancelled';
  }
}

/** The head a resumed turn is addressed and answered by (no message of the chat started it). */
export function resumedHead(pending: PendingApproval): InboundMessage {
  const { request } = pending.parked;
  return {
    id: resumedTurnId(pending),
    channel: request.channel,
    chatId: request.chatId,
    ...(request.threadId ? { threadId: request.threadId } : {}),
    senderId: pending.approvers[0] ?? '',
    content: '',
    media: [],
    sessionKey: pending.sessionKey,
    ...(pending.parked.replyTo ? { platformMessageId: pending.parked.replyTo } : {}),
    isGroup: request.isGroup ?? false,
    receivedAt: pending.askedAt,
    metadata: {},
  };
}
