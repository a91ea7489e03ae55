/**
 * WhatsApp's buttons: an OutboundMessage's actions as interactive reply
 * buttons (at most 3, a title of at most 20 characters) under the part that
 * carries them, each button's id its command; a press comes back as a
 * message of type `interactive` (`button_reply.id`), read into a Press in
 * inbound.ts. WhatsApp cannot edit a sent message, so the buttons stay on
 * it after a press: a second press is the same command again, which the
 * approval answers say was already answered.
 */
import type { OutboundAction } from '../../messages/messages.js';

/** The most characters of a reply button's title. */
export const BUTTON_TITLE_LIMIT = 20;

/** The most characters of an interactive message's body. */
export const INTERACTIVE_BODY_LIMIT = 1024;

/** A button's title: its label, cut to 20 characters with `…`. */
export function buttonTitle(label: string): string {
  const chars = [...label.trim()];
  return chars.length <= BUTTON_TITLE_LIMIT
    ? chars.join('')
    : `${chars.slice(0, BUTTON_TITLE_LIMIT - 1).join('')}…`;
}

/** The `interactive` object of a message showing `body` with the actions as reply buttons. */
export function interactiveButtons(
  body: string,
  actions: readonly OutboundAction[],
): Record<string, unknown> {
  return {
    type: 'button',
    body: { text: body },
    action: {
      buttons: actions.slice(0, 3).map((a) => ({
        type: 'reply',
        reply: { id: a.command, title: buttonTitle(a.label) },
      })),
    },
  };
}
