/**
 * Button presses (`OutboundMessage.actions`): pressing a button sends its
 * command as if the presser had typed it in the chat that holds the button.
 * Each platform reads its press event into a {@link Press}
 * (`telegram/press.ts`, `discord/press.ts`); the rules from there on are
 * here, the same for every channel: a person presses (not a bot), the
 * button carries a command a button may carry (anything else is a button
 * that is not ours: ignored), the presser may talk to the bot — the same
 * access check as for a message, with no pairing code offered for a press
 * — and then the InboundMessage the adapter hands to its intake.
 */
import { type InboundMessageInput, OutboundActionSchema } from '../messages/messages.js';
import type { AccessControl, Sender } from './access.js';

/** One press of a button, as a platform delivered it. */
export interface Press {
  /**
   * The inbound message's id, unique and stable per press (`telegram:<chat>:cbq:<query id>`,
   * `discord:<channel>:int:<interaction id>`): a press the platform delivers again is taken once.
   */
  id: string;
  /** The channel's name (`InboundMessage.channel`). */
  channel: string;
  /** What the button carried (its `callback_data`, `custom_id`): a command when it is ours. */
  data: unknown;
  /** Who pressed it (not the author of the message holding the button: that is the bot). */
  presser: Sender & { bot?: boolean };
  /** The chat of the message holding the button, as a message written there would have it. */
  chatId: string;
  threadId?: string;
  /** Whether messages in that chat are group messages. */
  isGroup: boolean;
  /** The platform id of the message holding the button (the answer replies to it). */
  messageId: string;
  /** When it was pressed (ISO). @defaultValue now */
  receivedAt?: string;
  /** The platform's extras, as its messages carry them (username, chat title, guild). */
  metadata?: Record<string, unknown>;
}

/** What to do with a press. */
export type PressDecision =
  | {
      kind: 'ignore';
      reason: string;
      /** The button carried no command a button may carry (worth a warning: not ours, or stale). */
      invalid?: boolean;
    }
  | { kind: 'publish'; message: InboundMessageInput };

/** Whether `data` is a command a button may carry (`OutboundActionSchema`'s rule: `/word arg…`, ≤ 60 characters). */
export function isActionCommand(data: unknown): data is string {
  return OutboundActionSchema.shape.command.safeParse(data).success;
}

/**
 * Decides what a press becomes: nothing, or the message the presser would have sent by typing
 * the button's command. Rejects only when the access check (Redis) failed, so the adapter can
 * try the press again.
 */
export async function decidePress(
  press: Press,
  access: Pick<AccessControl, 'isAllowed'>,
): Promise<PressDecision> {
  if (press.presser.bot) return { kind: 'ignore', reason: 'pressed by a bot' };
  if (!isActionCommand(press.data)) {
    return { kind: 'ignore', reason: 'the button carries no command', invalid: true };
  }
  const { bot: _bot, ...presser } = press.presser;
  if (!(await access.isAllowed(presser))) {
    return { kind: 'ignore', reason: 'pressed by a sender who may not talk to the bot' };
  }
  return {
    kind: 'publish',
    message: {
      id: press.id,
      channel: press.channel,
      chatId: press.chatId,
      ...(press.threadId ? { threadId: press.threadId } : {}),
      senderId: presser.id,
      ...(presser.displayName ? { senderName: presser.displayName } : {}),
      content: press.data,
      platformMessageId: press.messageId,
      isGroup: press.isGroup,
      ...(press.receivedAt ? { receivedAt: press.receivedAt } : {}),
      metadata: press.metadata ?? {},
    },
  };
}
