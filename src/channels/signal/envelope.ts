/**
 * What magpie reads of one signal-cli `receive` event, checked with zod: the
 * account it is for, and the envelope's sender, timestamp and data message
 * (text, mentions, quote, attachments, group). signal-cli's HTTP daemon sends
 * `{ account, envelope }` as the event's data; its socket mode wraps it as a
 * JSON-RPC notification (`{ method: 'receive', params: { … } }`): both are
 * read. Anything else — bad JSON, a missing timestamp, a wrong type — is
 * refused with a reason, never thrown.
 */
import { z } from 'zod';

const text = z.string().max(100_000);
const optionalText = text.nullish();

const MentionSchema = z.object({
  number: optionalText,
  uuid: optionalText,
  name: optionalText,
  start: z.number().int().nonnegative(),
  length: z.number().int().nonnegative(),
});

const AttachmentSchema = z.object({
  contentType: optionalText,
  filename: optionalText,
  // signal-cli names the file in its data folder by this id: a name, never a path.
  id: z
    .string()
    .regex(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/)
    .refine((id) => !id.includes('..'), 'not a path'),
  size: z.number().int().nonnegative().nullish(),
});

const DataMessageSchema = z.object({
  timestamp: z.number().int().positive().optional(),
  message: text.nullish(),
  mentions: z.array(MentionSchema).max(100).nullish(),
  quote: z
    .object({
      id: z.number().int().nullish(),
      authorNumber: optionalText,
      authorUuid: optionalText,
      author: optionalText,
    })
    .nullish(),
  attachments: z.array(AttachmentSchema).max(32).nullish(),
  groupInfo: z.object({ groupId: z.string().min(1).max(200) }).nullish(),
  reaction: z.unknown().optional(),
  remoteDelete: z.unknown().optional(),
});

const EnvelopeSchema = z.object({
  source: optionalText,
  sourceNumber: optionalText,
  sourceUuid: optionalText,
  sourceName: optionalText,
  timestamp: z.number().int().positive(),
  dataMessage: DataMessageSchema.nullish(),
});

const EventSchema = z.object({
  account: optionalText,
  envelope: EnvelopeSchema,
});

export type SignalMention = z.infer<typeof MentionSchema>;
export type SignalAttachment = z.infer<typeof AttachmentSchema>;
export type SignalEnvelope = z.infer<typeof EnvelopeSchema>;
export type SignalEvent = z.infer<typeof EventSchema>;

/** The event, or why it was refused. */
export type ParsedEvent = { ok: true; event: SignalEvent } | { ok: false; reason: string };

/**
 * Reads one event's data.
 *
 * @example parseEvent('{"account":"+1555","envelope":{"sourceNumber":"+1666","timestamp":1,"dataMessage":{"message":"hi"}}}')
 */
export function parseEvent(data: string): ParsedEvent {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  const notification = value as { method?: unknown; params?: unknown } | null;
  if (notification && typeof notification === 'object' && notification.method === 'receive') {
    value = notification.params;
  }
  const parsed = EventSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, reason: `not an envelope (${issue?.path.join('.') || 'event'}: ${issue?.message})` };
  }
  return { ok: true, event: parsed.data };
}
