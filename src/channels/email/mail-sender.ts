/**
 * Sending mail over SMTP with nodemailer: a reply in its thread (In-Reply-To,
 * References, `Re:` subject), as text (the Markdown as written) plus HTML
 * rendered from it, marked as an automatic reply (`Auto-Submitted:
 * auto-replied` and magpie's own header, so neither magpie nor a polite
 * autoresponder answers it). Its Message-ID derives from the outbound id, so
 * a retried send is recognisably the same mail.
 *
 * Failures decide the outbound job: a 5xx refusal is DELIVERY_PERMANENT (not
 * retried), anything else (4xx, the server unreachable) DELIVERY_TRANSIENT.
 */
import nodemailer, { type Transporter } from 'nodemailer';
import { AppError, describeError } from '../../errors/index.js';
import { shortHash } from '../../messages/short-hash.js';
import type { SmtpSettings } from './connection.js';
import { markdownToHtml } from './markdown-html.js';
import { MAGPIE_HEADER } from './noise.js';

/** One mail to send. */
export interface OutgoingMail {
  /** A stable id (the outbound message's): the Message-ID is made from it. */
  id: string;
  to: string;
  subject: string;
  /** The thread's Message-IDs, oldest first; the last is the mail answered. */
  references: string[];
  markdown: string;
}

export class MailSender {
  private readonly transport: Transporter;
  private readonly domain: string;

  constructor(
    settings: SmtpSettings,
    private readonly from: string,
  ) {
    this.domain = from.slice(from.lastIndexOf('@') + 1) || 'magpie.invalid';
    this.transport = nodemailer.createTransport({
      host: settings.host,
      port: settings.port,
      secure: settings.secure,
      requireTLS: settings.requireStartTls,
      ...(settings.user ? { auth: { user: settings.user, pass: settings.pass ?? '' } } : {}),
      connectionTimeout: 15_000,
      greetingTimeout: 15_000,
      socketTimeout: 60_000,
    });
  }

  /** Logs in without sending anything (doctor). */
  async verify(): Promise<void> {
    await this.transport.verify();
  }

  /** Sends one mail; throws AppError DELIVERY_PERMANENT (5xx) or DELIVERY_TRANSIENT. */
  async send(mail: OutgoingMail): Promise<void> {
    const inReplyTo = mail.references.at(-1);
    try {
      await this.transport.sendMail({
        from: this.from,
        to: mail.to,
        subject: mail.subject,
        messageId: `<${shortHash(mail.id, 32)}.magpie@${this.domain}>`,
        ...(inReplyTo ? { inReplyTo, references: mail.references } : {}),
        headers: { 'Auto-Submitted': 'auto-replied', [MAGPIE_HEADER]: '1' },
        text: mail.markdown,
        html: markdownToHtml(mail.markdown),
      });
    } catch (err) {
      throw smtpError(err);
    }
  }

  close(): void {
    this.transport.close();
  }
}

/** An SMTP failure as AppError: permanent for a 5xx reply, transient otherwise. */
export function smtpError(err: unknown): AppError {
  const code = (err as { responseCode?: unknown }).responseCode;
  const permanent = typeof code === 'number' && code >= 500 && code < 600;
  return new AppError(
    permanent ? 'DELIVERY_PERMANENT' : 'DELIVERY_TRANSIENT',
    `the SMTP server ${permanent ? 'refused' : 'did not take'} the mail: ${describeError(err)}`,
    { cause: err, transient: !permanent },
  );
}

/** `Re: <subject>` (once). */
export function replySubject(subject: string): string {
  return subject === '' ? 'Re: your message' : `Re: ${subject}`;
}
