/**
 * One signal-cli event → what to do with it: ignore, offer pairing, or hand
 * an InboundMessage (with the attachments to fetch) to the intake. Access is
 * checked (and group addressing applied) before anything is downloaded.
 *
 * - An event for another account than SIGNAL_ACCOUNT (a multi-account daemon,
 *   or a forged one) is ignored; so are the account's own messages, sync
 *   messages, receipts, typing, reactions and deletions.
 * - Senders are known by their ACI (uuid) and, when Signal shows it, their
 *   number: the allow list may name either.
 * - A DM is always for magpie; in a group magpie answers a message that
 *   mentions it (Signal's `mentions`, each a U+FFFC in the text) or quotes one
 *   of its messages. magpie's own mention is taken out of the text; others
 *   become `@name`.
 * - Chats: a DM is the sender (`signal:<uuid or number>`); a group is
 *   `group-<base64url id>` (no `/` in a session key). The inbound id is
 *   `signal:<sender>:<timestamp>`, the same however often the envelope arrives.
 */
import { AppError, describeError } from '../../errors/index.js';
import type { InboundMessageInput } from '../../messages/messages.js';
import type { AccessControl, Sender } from '../access.js';
import type { SignalAttachment, SignalEvent, SignalMention } from './envelope.js';

/** Signal's stand-in for a mention in the text. */
export const MENTION_CHARACTER = '\uFFFC';

/** The adapter's decision about one event. */
export type InboundAction =
  | { kind: 'ignore'; reason: string }
  | { kind: 'pairing'; chatId: string; code: string }
  | {
      kind: 'publish';
      message: Omit<InboundMessageInput, 'media'>;
      /** Fetched only when the message is published (an at-once command downloads nothing). */
      attachments: SignalAttachment[];
    };

export interface InboundContext {
  /** SIGNAL_ACCOUNT and, once known, the account's ACI: the ids that are magpie. */
  self: ReadonlySet<string>;
  access: AccessControl;
}

/** Decides what to do with `event` (nothing is downloaded here). */
export async function decideEvent(event: SignalEvent, ctx: InboundContext): Promise<InboundAction> {
  if (event.account && !ctx.self.has(event.account))
    return { kind: 'ignore', reason: `event for another account` };
  const envelope = event.envelope;
  const data = envelope.dataMessage;
  if (!data) return { kind: 'ignore', reason: 'no data message (receipt, typing, sync…)' };
  if (data.reaction || data.remoteDelete) return { kind: 'ignore', reason: 'reaction or deletion' };
  const number = envelope.sourceNumber ?? (envelope.source?.startsWith('+') ? envelope.source : undefined);
  const uuid = envelope.sourceUuid ?? undefined;
  const senderId = uuid ?? number;
  if (!senderId) return { kind: 'ignore', reason: 'no sender' };
  if ((number && ctx.self.has(number)) || (uuid && ctx.self.has(uuid)))
    return { kind: 'ignore', reason: 'from the account itself' };

  const groupId = data.groupInfo?.groupId;
  const isGroup = groupId !== undefined;
  const mentions = data.mentions ?? [];
  if (isGroup) {
    const mentioned = mentions.some((m) => isSelf(m.number, m.uuid, ctx.self));
    const quoted = data.quote ? isSelf(data.quote.authorNumber, data.quote.authorUuid, ctx.self) : false;
    if (!mentioned && !quoted) return { kind: 'ignore', reason: 'not addressed to magpie' };
  }
  const chatId = isGroup ? groupChatId(groupId) : senderId;
  const sender: Sender = {
    id: senderId,
    ...(envelope.sourceName ? { displayName: envelope.sourceName } : {}),
  };
  let allowed: boolean;
  try {
    allowed = await isAllowed(ctx.access, sender, number);
    if (!allowed && !isGroup) {
      const pairing = await ctx.access.requestPairing(sender, chatId);
      if (pairing.status === 'send') return { kind: 'pairing', chatId, code: pairing.code };
      return {
        kind: 'ignore',
        reason:
          pairing.status === 'full' ? 'too many pending pairing requests' : 'pairing code sent recently',
      };
    }
  } catch (err) {
    throw new AppError('REDIS_UNAVAILABLE', `signal access check failed: ${describeError(err)}`, {
      cause: err,
      transient: true,
    });
  }
  if (!allowed) return { kind: 'ignore', reason: 'unknown sender in a group' };

  const content = withMentions(data.message ?? '', mentions, ctx.self).trim();
  const attachments = data.attachments ?? [];
  if (content === '' && attachments.length === 0) return { kind: 'ignore', reason: 'empty message' };
  return {
    kind: 'publish',
    attachments,
    message: {
      id: `signal:${senderId}:${envelope.timestamp}`,
      channel: 'signal',
      chatId,
      senderId,
      senderName: envelope.sourceName || number || senderId,
      content,
      // The timestamp and author: what a reply quotes (sender.ts, quoteOf).
      platformMessageId: `${envelope.timestamp}:${number ?? senderId}`,
      isGroup,
      receivedAt: new Date(envelope.timestamp).toISOString(),
      metadata: { ...(number ? { number } : {}), ...(uuid ? { uuid } : {}) },
    },
  };
}

/** Allowed by id (ACI) or, when Signal shows it, by number. */
async function isAllowed(
  access: AccessControl,
  sender: Sender,
  number: string | undefined,
): Promise<boolean> {
  if (await access.isAllowed(sender)) return true;
  return number !== undefined && number !== sender.id && access.isAllowed({ ...sender, id: number });
}

function isSelf(
  number: string | null | undefined,
  uuid: string | null | undefined,
  self: ReadonlySet<string>,
): boolean {
  return (!!number && self.has(number)) || (!!uuid && self.has(uuid));
}

/**
 * The text with its mentions written out: magpie's own taken out, anyone else's as `@name`
 * (offsets in UTF-16 code units, which JavaScript strings count in).
 */
export function withMentions(text: string, mentions: SignalMention[], self: ReadonlySet<string>): string {
  let out = text;
  const sorted = [...mentions].sort((a, b) => b.start - a.start);
  for (const m of sorted) {
    if (m.start + m.length > out.length) continue;
    const name = isSelf(m.number, m.uuid, self) ? '' : `@${m.name || m.number || 'someone'}`;
    out = `${out.slice(0, m.start)}${name}${out.slice(m.start + m.length)}`;
  }
  return out.replace(/[ \t]{2,}/g, ' ');
}

/** A group's chat id: its base64 id as base64url, so no `/` enters the session key. */
export function groupChatId(groupId: string): string {
  return `group-${Buffer.from(groupId, 'base64').toString('base64url')}`;
}

/** Where a chat id sends: `{ groupId }` for a group, `{ recipient: [id] }` for a person. */
export function targetOf(chatId: string): { groupId: string } | { recipient: string[] } {
  if (chatId.startsWith('group-')) {
    return { groupId: Buffer.from(chatId.slice('group-'.length), 'base64url').toString('base64') };
  }
  return { recipient: [chatId] };
}
