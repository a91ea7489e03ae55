/**
 * Slack's buttons: an OutboundMessage's actions as a Block Kit `actions`
 * block under the message's text (in `section` blocks, as Slack then shows
 * blocks instead of `text`), each button carrying its command as `action_id`
 * and `value`; and a `block_actions` interaction read as a Press
 * (channels/press.ts decides what it becomes) in the chat a message there
 * would be in: `slack:<channel>` or `slack:<channel>/<thread_ts>`.
 */
import type { OutboundAction } from '../../messages/messages.js';
import type { Press } from '../press.js';

/** The most characters one `section` block's text takes. */
const SECTION_LIMIT = 3000;

/** A Block Kit block as magpie writes and reads it. */
export interface SlackBlock {
  type: string;
  block_id?: string;
  text?: { type: 'mrkdwn' | 'plain_text'; text: string };
  elements?: Array<{
    type: 'button';
    text: { type: 'plain_text'; text: string };
    action_id: string;
    value: string;
    style?: 'danger';
  }>;
}

/** `text` as section blocks of at most 3000 characters each (cut at a line break when there is one). */
export function sectionBlocks(text: string): SlackBlock[] {
  const blocks: SlackBlock[] = [];
  let rest = text;
  while (rest !== '') {
    let cut = rest.length;
    if (cut > SECTION_LIMIT) {
      const newline = rest.lastIndexOf('\n', SECTION_LIMIT);
      cut = newline > SECTION_LIMIT / 2 ? newline + 1 : SECTION_LIMIT;
    }
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: rest.slice(0, cut) } });
    rest = rest.slice(cut);
  }
  return blocks;
}

/** The blocks of a part: its text and, when there are actions, a row of buttons ("Deny…" red). */
export function blocksWith(
  text: string,
  actions: readonly OutboundAction[] | undefined,
): SlackBlock[] | undefined {
  if (!actions || actions.length === 0) return undefined;
  return [
    ...sectionBlocks(text),
    {
      type: 'actions',
      block_id: 'magpie-actions',
      elements: actions.map((a) => ({
        type: 'button',
        text: { type: 'plain_text', text: a.label },
        action_id: a.command,
        value: a.command,
        ...(/^deny\b/i.test(a.label) ? { style: 'danger' as const } : {}),
      })),
    },
  ];
}

/** A `block_actions` payload, as far as magpie reads it. */
export interface BlockActionsPayload {
  type: 'block_actions';
  user?: { id?: string; username?: string; name?: string };
  channel?: { id?: string };
  container?: { channel_id?: string; message_ts?: string; thread_ts?: string };
  message?: { ts?: string; thread_ts?: string; text?: string; blocks?: SlackBlock[] };
  actions?: Array<{ action_id?: string; value?: string; action_ts?: string }>;
}

/**
 * The press a `block_actions` payload is: its button's `value`, by the user who clicked, in the
 * button's chat. Undefined when the payload lacks what a press needs.
 */
export function pressOf(payload: BlockActionsPayload, botUserId: string): Press | undefined {
  const action = payload.actions?.[0];
  const channel = payload.channel?.id ?? payload.container?.channel_id;
  const messageTs = payload.message?.ts ?? payload.container?.message_ts;
  const user = payload.user;
  if (!action?.action_ts || !channel || !messageTs || !user?.id) return undefined;
  const threadTs = payload.message?.thread_ts ?? payload.container?.thread_ts;
  const isGroup = !channel.startsWith('D');
  const name = user.name ?? user.username;
  return {
    id: `slack:${channel}:act:${action.action_ts}`,
    channel: 'slack',
    data: action.value,
    presser: {
      id: user.id,
      ...(user.username ? { username: user.username } : {}),
      ...(name ? { displayName: name } : {}),
      bot: user.id === botUserId,
    },
    chatId: channel,
    // In a channel every conversation is a thread (the message's own thread when it starts one).
    ...(threadTs ? { threadId: threadTs } : isGroup ? { threadId: messageTs } : {}),
    isGroup,
    messageId: messageTs,
    receivedAt: new Date(Number(action.action_ts) * 1000).toISOString(),
    metadata: { ...(user.username ? { username: user.username } : {}) },
  };
}
