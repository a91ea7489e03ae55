/**
 * Sends one OutboundMessage to WhatsApp: the Markdown in WhatsApp's
 * formatting (format/whatsapp.ts), split under 4,096 characters with code
 * blocks closed and reopened (chunk.ts), each part posted in order as a text
 * message. The last part carries the actions as reply buttons (an
 * interactive message, whose body takes 1,024 characters: a longer last part
 * is split again so its end carries them). WhatsApp cannot edit, so there is
 * no live reply. A spoken reply is uploaded and sent as a voice message
 * ({@link deliverVoice}).
 *
 * Refusals: 131047 means the 24-hour customer-service window is closed (the
 * person has not written for a day; only a template may start a
 * conversation), which no retry fixes: DELIVERY_PERMANENT, so the job fails
 * at once and `magpie status` lists it. Rate limits, Meta's own hiccups, 5xx
 * and network failures are DELIVERY_TRANSIENT (retried by delivery); any
 * other 4xx refusal is permanent.
 */
import { AppError, describeError } from '../../errors/index.js';
import type { OutboundAction, OutboundMessage } from '../../messages/messages.js';
import { splitMessage, splitReply } from '../chunk.js';
import { toWhatsApp } from '../format/whatsapp.js';
import { INTERACTIVE_BODY_LIMIT, interactiveButtons } from './buttons.js';
import { type GraphClient, GraphError } from './graph.js';
import type { WaError } from './inbound.js';

/** The longest text message WhatsApp takes, in characters. */
export const WHATSAPP_TEXT_LIMIT = 4096;

/** Meta's error code for a send outside the 24-hour customer-service window. */
export const WINDOW_CLOSED = 131047;

/** Meta's error codes another attempt may get past: rate limits, throttling, temporary trouble on Meta's side. */
const TRANSIENT_CODES = new Set([1, 2, 4, 17, 341, 80007, 130429, 131000, 131016, 131048, 131056, 133004]);

/** One message to post: text, and buttons on the last. */
export interface WhatsAppPart {
  text: string;
  actions?: readonly OutboundAction[];
}

/** The parts of a reply, in WhatsApp's formatting (at most MAX_REPLY_PARTS text parts, see chunk.ts). */
export function whatsappParts(content: string, actions?: readonly OutboundAction[]): WhatsAppPart[] {
  // The Markdown is split first (so a huge reply is formatted only as far as it is sent); a part
  // WhatsApp's forms made longer than the limit (seldom: quotes, tables) is split again.
  const texts = splitReply(content, WHATSAPP_TEXT_LIMIT)
    .map(toWhatsApp)
    .flatMap((text) =>
      text.length <= WHATSAPP_TEXT_LIMIT ? [text] : splitMessage(text, WHATSAPP_TEXT_LIMIT),
    )
    .filter((text) => text.trim() !== '');
  if (!actions || actions.length === 0 || texts.length === 0) return texts.map((text) => ({ text }));
  const last = texts.pop() as string;
  const tail = last.length <= INTERACTIVE_BODY_LIMIT ? [last] : splitMessage(last, INTERACTIVE_BODY_LIMIT);
  return [
    ...[...texts, ...tail.slice(0, -1)].map((text) => ({ text })),
    { text: tail.at(-1) as string, actions },
  ];
}

/** The send payload of one part to `to`. */
export function partPayload(to: string, part: WhatsAppPart): Record<string, unknown> {
  if (part.actions && part.actions.length > 0)
    return { to, type: 'interactive', interactive: interactiveButtons(part.text, part.actions) };
  return { to, type: 'text', text: { preview_url: false, body: part.text } };
}

/** Posts every part of `message` in order, skipping the `alreadySent` ones. Returns the number of parts. */
export async function deliverMessage(
  graph: GraphClient,
  message: OutboundMessage,
  alreadySent = 0,
  onPartSent: (index: number, messageId: string) => void = () => {},
): Promise<number> {
  const parts = whatsappParts(message.content, message.actions);
  for (let index = alreadySent; index < parts.length; index++) {
    let id: string;
    try {
      id = await graph.sendMessage(partPayload(message.chatId, parts[index]!));
    } catch (err) {
      throw toDeliveryError(err, message.chatId);
    }
    onPartSent(index, id);
  }
  return parts.length;
}

/**
 * Sends a spoken reply (OGG/Opus) as a voice message: uploads it (`/<phone number id>/media`), then
 * posts an `audio` message of that media id with `voice: true`. Resolves to the message id.
 */
export async function deliverVoice(graph: GraphClient, to: string, ogg: Buffer): Promise<string> {
  try {
    const mediaId = await graph.uploadMedia(ogg, 'audio/ogg', 'reply.ogg');
    return await graph.sendMessage({ to, type: 'audio', audio: { id: mediaId, voice: true } });
  } catch (err) {
    throw toDeliveryError(err, to);
  }
}

/** Classifies a failed send (by Meta's code and the HTTP status, not by text). */
export function toDeliveryError(err: unknown, to: string): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof GraphError) {
    if (err.code === WINDOW_CLOSED) {
      return new AppError(
        'DELIVERY_PERMANENT',
        `WhatsApp refused the message to +${to}: the 24-hour window is closed (${WINDOW_CLOSED}); it opens when they write again`,
        { cause: err },
      );
    }
    const transient =
      (err.code !== undefined && TRANSIENT_CODES.has(err.code)) || err.status === 429 || err.status >= 500;
    const code = err.code === undefined ? '' : ` (${err.code})`;
    return new AppError(
      transient ? 'DELIVERY_TRANSIENT' : 'DELIVERY_PERMANENT',
      `WhatsApp refused the message to +${to}: HTTP ${err.status}${code} ${err.details ?? err.message}`,
      {
        cause: err,
        transient,
        ...(transient && err.retryAfterMs !== undefined ? { retryAfterMs: err.retryAfterMs } : {}),
      },
    );
  }
  return new AppError('DELIVERY_TRANSIENT', `WhatsApp send to +${to} failed: ${describeError(err)}`, {
    cause: err,
    transient: true,
  });
}

/** Why a send failed, as `magpie status` shows it. */
export function failureReason(error: WaError | undefined): string {
  if (!error) return 'failed (Meta gave no reason)';
  if (error.code === WINDOW_CLOSED)
    return `the 24-hour window is closed (${WINDOW_CLOSED}); it opens when they write again`;
  const title = error.title ?? error.message ?? 'failed';
  const details = error.error_data?.details;
  return `${title} (${error.code ?? '?'})${details && details !== title ? `: ${details}` : ''}`;
}
