/**
 * A webhook notification → what to do with each of its parts. Meta posts
 * `{ object: 'whatsapp_business_account', entry: [{ changes: [{ field:
 * 'messages', value }] }] }`; a value carries `messages` (what people wrote),
 * `contacts` (their profile names) and `statuses` (what became of what magpie
 * sent). Only values for our phone number id are read: one app may serve
 * several numbers.
 *
 * Each message is decided before anything is downloaded: a button reply is a
 * Press (channels/press.ts decides it, with the access check and no pairing);
 * anything else from a sender not on the allow-list (and not approved) gets a
 * pairing code; an allowed sender's text, image, voice note or file becomes
 * an InboundMessage with the media to fetch. Every chat is a DM
 * (`whatsapp:<number>`), its id the sender's number as WhatsApp gives it
 * (digits, no `+`); the inbound id is `whatsapp:<number>:<message id>`, so a
 * redelivered webhook is taken once by the mailbox.
 */
import { AppError, describeError } from '../../errors/index.js';
import type { InboundMessageInput, Media } from '../../messages/messages.js';
import type { AccessControl } from '../access.js';
import type { Press } from '../press.js';

/** A received media object (`image`, `audio`, `video`, `document`, `sticker`). */
export interface WaMediaRef {
  id?: string;
  mime_type?: string;
  caption?: string;
  filename?: string;
  /** On `audio`: a voice note recorded in WhatsApp. */
  voice?: boolean;
}

/** One received message, as far as magpie reads it. */
export interface WaMessage {
  from?: string;
  id?: string;
  timestamp?: string;
  type?: string;
  text?: { body?: string };
  image?: WaMediaRef;
  audio?: WaMediaRef;
  video?: WaMediaRef;
  document?: WaMediaRef;
  sticker?: WaMediaRef;
  location?: { latitude?: number; longitude?: number; name?: string; address?: string };
  interactive?: {
    type?: string;
    button_reply?: { id?: string; title?: string };
    list_reply?: { id?: string; title?: string };
  };
  /** A template's quick-reply button. */
  button?: { payload?: string; text?: string };
  /** The message it answers (a button reply: the message holding the button). */
  context?: { from?: string; id?: string };
  /** Set on a message in a group. */
  group_id?: string;
}

/** An error Meta reports in a status callback (or a value's `errors`). */
export interface WaError {
  code?: number;
  title?: string;
  message?: string;
  error_data?: { details?: string };
}

/** What became of a message magpie sent. */
export interface WaStatus {
  id?: string;
  status?: string;
  timestamp?: string;
  recipient_id?: string;
  errors?: WaError[];
}

/** One change's value. */
export interface WaValue {
  messaging_product?: string;
  metadata?: { phone_number_id?: string; display_phone_number?: string };
  contacts?: Array<{ wa_id?: string; profile?: { name?: string } }>;
  messages?: WaMessage[];
  statuses?: WaStatus[];
  errors?: WaError[];
}

/** The body of a webhook POST. */
export interface WaNotification {
  object?: string;
  entry?: Array<{ id?: string; changes?: Array<{ field?: string; value?: WaValue }> }>;
}

/** A notification's parts for our number. */
export interface ReadNotification {
  /** Received messages, in order, each with the sender's profile name when Meta gave one. */
  messages: Array<{ message: WaMessage; name?: string }>;
  statuses: WaStatus[];
  /** Values addressed to other phone number ids (not ours), by id. */
  otherNumbers: string[];
}

/** The messages and statuses of `body` addressed to `phoneNumberId`. */
export function readNotification(body: WaNotification, phoneNumberId: string): ReadNotification {
  const read: ReadNotification = { messages: [], statuses: [], otherNumbers: [] };
  if (body.object !== 'whatsapp_business_account' || !Array.isArray(body.entry)) return read;
  for (const entry of body.entry) {
    for (const change of Array.isArray(entry?.changes) ? entry.changes : []) {
      const value = change?.value;
      if (change?.field !== 'messages' || !value || typeof value !== 'object') continue;
      const number = value.metadata?.phone_number_id;
      if (number !== phoneNumberId) {
        read.otherNumbers.push(String(number ?? '?'));
        continue;
      }
      const names = new Map<string, string>();
      for (const contact of Array.isArray(value.contacts) ? value.contacts : []) {
        if (contact?.wa_id && contact.profile?.name) names.set(contact.wa_id, contact.profile.name);
      }
      for (const message of Array.isArray(value.messages) ? value.messages : []) {
        if (!message || typeof message !== 'object') continue;
        const name = message.from ? names.get(message.from) : undefined;
        read.messages.push({ message, ...(name ? { name } : {}) });
      }
      for (const status of Array.isArray(value.statuses) ? value.statuses : []) {
        if (status && typeof status === 'object') read.statuses.push(status);
      }
    }
  }
  return read;
}

/** A received attachment: fetched by its media id when published, or described only. */
export type MediaPlan =
  | { kind: 'fetch'; mediaId: string; mimeType: string; name: string }
  | { kind: 'describe'; media: Media };

/** The adapter's decision about one message. */
export type InboundAction =
  | { kind: 'ignore'; reason: string }
  | { kind: 'pairing'; chatId: string; code: string }
  | { kind: 'press'; press: Press }
  | {
      kind: 'publish';
      message: Omit<InboundMessageInput, 'media'>;
      /** Fetched only when the message is published (an at-once command downloads nothing). */
      media: MediaPlan[];
    };

export interface InboundContext {
  access: AccessControl;
}

/** Message types that carry nothing for the model (a reaction, an unsupported or system message). */
const IGNORED_TYPES = new Set(['reaction', 'unsupported', 'system', 'order', 'ephemeral', 'request_welcome']);

/** Decides what to do with one received message (nothing is downloaded here). */
export async function decideMessage(
  message: WaMessage,
  name: string | undefined,
  ctx: InboundContext,
): Promise<InboundAction> {
  const { from, id, type } = message;
  if (!from || !id || !type) return { kind: 'ignore', reason: 'no sender, id or type' };
  if (message.group_id) return { kind: 'ignore', reason: 'a group message (groups are not supported)' };
  if (IGNORED_TYPES.has(type)) return { kind: 'ignore', reason: `a ${type} message` };
  const receivedAt = timeOf(message.timestamp);
  const sender = { id: from, ...(name ? { displayName: name } : {}) };
  const press = pressOf(message, name, receivedAt);
  if (press) return { kind: 'press', press };

  let allowed: boolean;
  try {
    allowed = await ctx.access.isAllowed(sender);
    if (!allowed) {
      const pairing = await ctx.access.requestPairing(sender, from);
      if (pairing.status === 'send') return { kind: 'pairing', chatId: from, code: pairing.code };
      return {
        kind: 'ignore',
        reason:
          pairing.status === 'full' ? 'too many pending pairing requests' : 'pairing code sent recently',
      };
    }
  } catch (err) {
    throw new AppError('REDIS_UNAVAILABLE', `whatsapp access check failed: ${describeError(err)}`, {
      cause: err,
      transient: true,
    });
  }

  const { content, media } = contentOf(message);
  if (content.trim() === '' && media.length === 0)
    return { kind: 'ignore', reason: `an empty ${type} message` };
  return {
    kind: 'publish',
    media,
    message: {
      id: `whatsapp:${from}:${id}`,
      channel: 'whatsapp',
      chatId: from,
      senderId: from,
      senderName: name ?? `+${from}`,
      content: content.trim(),
      platformMessageId: id,
      isGroup: false,
      ...(receivedAt ? { receivedAt } : {}),
      metadata: name ? { profileName: name } : {},
    },
  };
}

/** A reply button pressed (or a list row picked): the button's id, which carries its command. */
function pressOf(
  message: WaMessage,
  name: string | undefined,
  receivedAt: string | undefined,
): Press | undefined {
  const reply =
    message.type === 'interactive'
      ? (message.interactive?.button_reply ?? message.interactive?.list_reply)
      : undefined;
  if (!reply || !message.from || !message.id) return undefined;
  return {
    id: `whatsapp:${message.from}:${message.id}`,
    channel: 'whatsapp',
    data: reply.id,
    presser: { id: message.from, ...(name ? { displayName: name } : {}) },
    chatId: message.from,
    isGroup: false,
    messageId: message.context?.id ?? message.id,
    ...(receivedAt ? { receivedAt } : {}),
    metadata: name ? { profileName: name } : {},
  };
}

/** The text the model reads and the attachments to fetch or describe. */
function contentOf(message: WaMessage): { content: string; media: MediaPlan[] } {
  switch (message.type) {
    case 'text':
      return { content: message.text?.body ?? '', media: [] };
    case 'image':
    case 'sticker':
      return fetched(message[message.type], 'image/jpeg', message.type);
    case 'audio': {
      const audio = message.audio;
      return fetched(audio, 'audio/ogg', audio?.voice ? 'voice note' : 'audio');
    }
    case 'document': {
      const doc = message.document;
      const mimeType = bareType(doc?.mime_type) ?? 'application/octet-stream';
      // Images and audio sent as files still reach the model; anything else is described.
      if (mimeType.startsWith('image/') || mimeType.startsWith('audio/'))
        return fetched(doc, mimeType, doc?.filename ?? 'document');
      return described(doc, mimeType, doc?.filename ?? 'document', 'file');
    }
    case 'video': {
      const video = message.video;
      return described(video, bareType(video?.mime_type) ?? 'video/mp4', 'video', 'video');
    }
    case 'location': {
      const l = message.location ?? {};
      const place = [l.name, l.address].filter(Boolean).join(', ');
      return {
        content: `[location: ${l.latitude ?? '?'}, ${l.longitude ?? '?'}${place ? ` (${place})` : ''}]`,
        media: [],
      };
    }
    case 'button':
      return { content: message.button?.text ?? message.button?.payload ?? '', media: [] };
    default:
      return { content: '', media: [] };
  }
}

function fetched(ref: WaMediaRef | undefined, fallbackType: string, name: string) {
  const media: MediaPlan[] = ref?.id
    ? [{ kind: 'fetch', mediaId: ref.id, mimeType: bareType(ref.mime_type) ?? fallbackType, name }]
    : [];
  return { content: ref?.caption ?? '', media };
}

function described(ref: WaMediaRef | undefined, mimeType: string, name: string, what: string) {
  const media: MediaPlan[] = [
    {
      kind: 'describe',
      media: { kind: 'file', mimeType, name, note: `${what} "${name}" (${mimeType}) was not opened` },
    },
  ];
  return { content: ref?.caption ?? '', media };
}

/** `audio/ogg; codecs=opus` → `audio/ogg`. */
function bareType(mime: string | undefined): string | undefined {
  const bare = mime?.split(';')[0]?.trim().toLowerCase();
  return bare ? bare : undefined;
}

/** Meta's Unix seconds as an ISO time; undefined when absent or not a number. */
function timeOf(timestamp: string | undefined): string | undefined {
  const seconds = Number(timestamp);
  return timestamp && Number.isFinite(seconds) ? new Date(seconds * 1000).toISOString() : undefined;
}
