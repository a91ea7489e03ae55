/**
 * A received mail (parsed by mailparser) → what to do with it: ignore it
 * (noise, a sender not allowed, or a From the receiving server did not
 * authenticate), or hand an InboundMessage to the intake. Every inbound rule
 * of the adapter is here, in order; pure, no I/O.
 *
 * Sessions follow threads: the chat is the sender's address and the thread a
 * short hash of the thread's root Message-ID (the first of `References`, else
 * `In-Reply-To`, else the mail's own id), so a reply continues the
 * conversation and a new mail starts one. The model reads the user's own
 * words: quoted history and signature are stripped, HTML-only mail becomes
 * text, and a command on the first line is the whole message.
 */
import type { ParsedMail } from 'mailparser';
import { routeCommand } from '../../commands/router.js';
import type { InboundMessageInput, Media } from '../../messages/messages.js';
import { shortHash } from '../../messages/short-hash.js';
import { htmlToText } from '../../tools/html-text.js';
import { megabytes, tooLargeNote } from '../download.js';
import { type RequiredAuth, verifySender } from './auth-results.js';
import { noiseReason } from './noise.js';
import { stripQuoted } from './quotes.js';

/** Message-IDs of a thread kept for `References`. */
const MAX_REFERENCES = 20;

/** Where a conversation's replies go, and its mail headers. */
export interface EmailRoute {
  chatId: string;
  threadId: string;
  /** `email:<address>/<thread>`: the key of the thread's record. */
  threadKey: string;
  subject: string;
  references: string[];
}

export type MailDecision =
  | { kind: 'ignore'; reason: string; detail: string }
  | { kind: 'publish'; route: EmailRoute; message: InboundMessageInput };

export interface DecideMailContext {
  /** EMAIL_ALLOW_FROM: addresses, `*@domain` or `*`. */
  allowFrom: readonly string[];
  /** EMAIL_FROM: magpie's own address (its mail is never answered). */
  ownAddress: string | undefined;
  authservId: string | undefined;
  requireAuth: RequiredAuth;
  /** config.media.maxBytes: larger attachments are described, not handed on. */
  maxMediaBytes: number;
  /** An id for a mail without a Message-ID (from the mailbox's UIDVALIDITY and UID). */
  fallbackId: string;
}

/** What to do with one mail. */
export function decideMail(mail: ParsedMail, ctx: DecideMailContext): MailDecision {
  const senders = mail.from?.value.filter((a) => a.address) ?? [];
  if (senders.length !== 1) return ignore('malformed', 'not exactly one From address');
  const sender = senders[0]!;
  const address = sender.address!.toLowerCase();
  const header = headerReader(mail);
  const noise = noiseReason((name) => header(name)[0], address, ctx.ownAddress);
  if (noise) return ignore(noise, `${noise} mail from ${address}`);
  if (!isAllowed(address, ctx.allowFrom))
    return ignore('not-allowed', `${address} is not in EMAIL_ALLOW_FROM`);
  const domain = address.slice(address.lastIndexOf('@') + 1);
  const verdict = verifySender(header('authentication-results'), {
    authservId: ctx.authservId,
    require: ctx.requireAuth,
    fromDomain: domain,
  });
  if (!verdict.ok) return ignore('unauthenticated', `From ${address} not proven: ${verdict.reason}`);

  const messageId = mail.messageId?.trim() || ctx.fallbackId;
  const references = referencesOf(mail);
  const root = references[0] ?? mail.inReplyTo?.trim() ?? messageId;
  const threadId = shortHash(root, 16);
  const subject = baseSubject(mail.subject ?? '');
  const route: EmailRoute = {
    chatId: address,
    threadId,
    threadKey: `${address}/${threadId}`,
    subject,
    references: [...references.filter((r) => r !== messageId), messageId].slice(-MAX_REFERENCES),
  };
  const content = contentOf(mail, root === messageId ? subject : undefined);
  const message: InboundMessageInput = {
    id: `email:${messageId}`,
    channel: 'email',
    chatId: address,
    threadId,
    senderId: address,
    ...(sender.name ? { senderName: sender.name } : {}),
    content,
    media: mediaOf(mail, ctx.maxMediaBytes),
    platformMessageId: messageId,
    metadata: { subject },
  };
  return { kind: 'publish', route, message };
}

function ignore(reason: string, detail: string): MailDecision {
  return { kind: 'ignore', reason, detail };
}

/** Whether `address` is on the list: itself, `*@` its domain, or `*`. */
export function isAllowed(address: string, allowFrom: readonly string[]): boolean {
  const domain = address.slice(address.lastIndexOf('@') + 1);
  return allowFrom.some((entry) => {
    const e = entry.trim().toLowerCase();
    return e === '*' || e === address || e === `*@${domain}`;
  });
}

/** A header's values in the order they appear (topmost first), without the field name. */
function headerReader(mail: ParsedMail): (name: string) => string[] {
  return (name) =>
    mail.headerLines
      .filter((h) => h.key === name)
      .map((h) => {
        const colon = h.line.indexOf(':');
        return colon === -1 ? '' : h.line.slice(colon + 1).trim();
      });
}

function referencesOf(mail: ParsedMail): string[] {
  const refs = mail.references;
  if (refs === undefined) return [];
  return (Array.isArray(refs) ? refs : [refs]).map((r) => r.trim()).filter((r) => r !== '');
}

/** The subject without the `Re:`/`Fwd:` prefixes replies add. */
export function baseSubject(subject: string): string {
  let s = subject.trim();
  for (;;) {
    const lower = s.toLowerCase();
    const prefix = ['re:', 'aw:', 'fwd:', 'fw:'].find((p) => lower.startsWith(p));
    if (!prefix) return s;
    s = s.slice(prefix.length).trim();
  }
}

/**
 * The text the model reads: the user's words (quotes and signature stripped; HTML-only mail as
 * text), under the subject for a thread's first mail; a command on the first line alone.
 */
function contentOf(mail: ParsedMail, subject: string | undefined): string {
  const body = mail.text ?? (mail.html ? htmlToText(mail.html) : '');
  const words = stripQuoted(body);
  const firstLine = words.split('\n', 1)[0]!.trim();
  if (firstLine !== '' && routeCommand(firstLine).runs !== 'text') return firstLine;
  return subject ? `Subject: ${subject}\n\n${words}` : words;
}

/** Images and PDFs within the size cap as data URLs; anything else described. */
function mediaOf(mail: ParsedMail, maxBytes: number): Media[] {
  const media: Media[] = [];
  for (const a of mail.attachments) {
    // Images referenced by the HTML (logos in signatures) are part of the layout, not attachments.
    if (a.related) continue;
    const mimeType = a.contentType.toLowerCase();
    const name = a.filename ?? 'attachment';
    const kind = mimeType.startsWith('image/') ? 'image' : 'file';
    const handedOn = kind === 'image' || mimeType === 'application/pdf';
    const base = { kind, mimeType, name, size: a.size } as const;
    if (!handedOn) {
      media.push({
        ...base,
        note: `"${name}" (${mimeType}, ${megabytes(a.size)}) was attached; its content is not available`,
      });
    } else if (a.size > maxBytes) {
      media.push({ ...base, note: tooLargeNote(a.size, maxBytes) });
    } else {
      media.push({ ...base, dataUrl: `data:${mimeType};base64,${a.content.toString('base64')}` });
    }
  }
  return media;
}
