/**
 * The one way in for an accepted message (after the adapter's access and
 * addressing rules): the command router (src/commands/router.ts) decides, and
 * the message is either answered at once (/stop: cancel the chat's running
 * turn and say so, without waiting for it) or published for the session's
 * turn (text and in-turn commands). Adapters carry no command logic and no
 * command text; they give this function three small ports.
 */

import { answerReply, parseAnswer } from '../approvals/question.js';
import { routeCommand } from '../commands/router.js';
import type { AnswerOutcome, ApprovalAnswer } from '../messages/approval.js';
import { type InboundMessageInput, sessionKeyOf } from '../messages/messages.js';
import type { ChannelBus } from './types.js';

/** What the intake needs from the adapter. */
export interface IntakePorts {
  /**
   * Queues the message for the session's turn (usually `bus.publishInbound`; an
   * adapter fetches attachments here, so an at-once command downloads nothing).
   */
  publish(message: InboundMessageInput): Promise<void>;
  /** Aborts a session's running turn; true when one was running (`bus.cancel`). */
  cancel(sessionKey: string): Promise<boolean>;
  /** Answers in the message's chat at once. */
  reply(text: string): Promise<void>;
  /** Settles the session's approval question (`bus.answerApproval`). Absent: questions cannot be answered here. */
  approve?(sessionKey: string, answer: ApprovalAnswer): Promise<AnswerOutcome>;
}

/** The ports every adapter takes from the bus: /stop's cancel and the approval answers. */
export function busIntakePorts(
  bus: Pick<ChannelBus, 'cancel' | 'answerApproval'>,
): Pick<IntakePorts, 'cancel' | 'approve'> {
  return {
    cancel: (sessionKey) => bus.cancel(sessionKey),
    approve: (sessionKey, answer) => bus.answerApproval(sessionKey, answer),
  };
}

/** Options of {@link intake}. */
export interface IntakeOptions {
  /** The bot's own name: a command addressed `@` another bot is text. @defaultValue any */
  bot?: string;
}

/** What became of the message. */
export type IntakeResult = 'published' | 'answered';

/**
 * Routes one accepted message: an at-once command runs now against the
 * message's session, anything else is published.
 *
 * @example
 * await intake(message, {
 *   publish: (m) => bus.publishInbound(m),
 *   cancel: (key) => bus.cancel(key),
 *   reply: (text) => sendPlain(chatId, text),
 * });
 */
export async function intake(
  message: InboundMessageInput,
  ports: IntakePorts,
  options: IntakeOptions = {},
): Promise<IntakeResult> {
  const route = routeCommand(message.content, options.bot);
  if (route.runs !== 'at-once') {
    await ports.publish(message);
    return 'published';
  }
  const sessionKey = sessionKeyOf(message);
  const { approve } = ports;
  await route.entry.run({
    cancel: () => ports.cancel(sessionKey),
    // An empty answer says nothing (a delivery of the same press again).
    reply: (text) => (text === '' ? Promise.resolve() : ports.reply(text)),
    ...(route.command.argument ? { argument: route.command.argument } : {}),
    ...(approve
      ? {
          approve: async (command: 'approve' | 'deny', argument: string | undefined) => {
            const read = parseAnswer(command, argument);
            if (!read)
              return `Answer with /${command} followed by the code in the question, e.g. /${command} K7QF2.`;
            const senderName = message.senderName || message.senderId || 'someone';
            const answer = { ...read, senderId: message.senderId ?? '', senderName, messageId: message.id };
            return answerReply(await approve(sessionKey, answer), answer);
          },
        }
      : {}),
  });
  return 'answered';
}
