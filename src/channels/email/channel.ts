/**
 * The e-mail channel: IMAP in (MailboxReader: IDLE, the last UID in Redis,
 * `\Seen` once a mail is on the bus), the rules of inbound.ts (noise, the
 * allow-list, the receiving server's Authentication-Results, threads), the
 * intake (commands on a mail's first line; an at-once command's answer is
 * mailed back in the thread), and SMTP out (MailSender: replies in their
 * thread, text and HTML). No live replies, no typing. Never calls the LLM.
 */
import { simpleParser } from 'mailparser';
import { ConfigError, describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { OutboundMessage } from '../../messages/messages.js';
import { shortHash } from '../../messages/short-hash.js';
import { busIntakePorts, intake } from '../intake.js';
import type { Channel, ChannelDeps } from '../types.js';
import { imapSettings, smtpSettings } from './connection.js';
import { decideMail, type EmailRoute } from './inbound.js';
import { MailSender, replySubject } from './mail-sender.js';
import { type HandleOutcome, MailboxReader } from './mailbox-reader.js';
import type { EmailStore } from './store.js';

/** Tuning knobs, mostly for tests. */
export interface EmailChannelOptions {
  /** First delay before reconnecting to IMAP or retrying a mail the bus refused. @defaultValue 1000 */
  retryDelayMs?: number;
  /** Quiet time on the IMAP connection before IDLE starts. @defaultValue 1000 */
  idleDelayMs?: number;
}

export class EmailChannel implements Channel {
  readonly name = 'email';
  private readonly logger: Logger;
  private readonly reader: MailboxReader;
  private readonly sender: MailSender;
  private readonly settings: ChannelDeps['config']['channels']['email'];
  private stopping: Promise<void> | undefined;

  constructor(
    private readonly deps: ChannelDeps,
    private readonly store: EmailStore,
    options: EmailChannelOptions = {},
  ) {
    const settings = deps.config.channels.email;
    if (!settings.imapUrl || !settings.smtpUrl) {
      throw new ConfigError('EMAIL_IMAP_URL and EMAIL_SMTP_URL must both be set for the e-mail channel');
    }
    if (!settings.from) throw new ConfigError('EMAIL_FROM is not set: the address magpie sends from');
    if (settings.requireAuth !== 'off' && !settings.authservId) {
      throw new ConfigError(
        "EMAIL_AUTHSERV_ID is not set: the authserv-id your mail server writes in Authentication-Results (e.g. mx.fastmail.com); without it no sender's From can be trusted",
      );
    }
    this.settings = settings;
    this.logger = deps.logger.child({ channel: this.name });
    if (settings.requireAuth === 'off') {
      this.logger.warn('EMAIL_REQUIRE_AUTH=off: anyone can write as an allowed sender (From is not proof)');
    }
    const imap = imapSettings(settings.imapUrl);
    this.sender = new MailSender(smtpSettings(settings.smtpUrl), settings.from);
    this.reader = new MailboxReader({
      settings: imap,
      store,
      logger: this.logger,
      handle: (source, id) => this.handleMail(source, `${id.uidValidity}.${id.uid}@${imap.key}`),
      // Room for attachments within the media cap, and the text around them (base64 grows by 4/3).
      maxMessageBytes: Math.ceil(deps.config.media.maxBytes * 1.4) + 1024 * 1024,
      ...(options.retryDelayMs !== undefined ? { retryDelayMs: options.retryDelayMs } : {}),
      ...(options.idleDelayMs !== undefined ? { idleDelayMs: options.idleDelayMs } : {}),
    });
  }

  async start(): Promise<void> {
    await this.reader.start();
  }

  /** Closes IMAP and SMTP. Idempotent: the same promise every time. */
  stop(): Promise<void> {
    this.stopping ??= this.reader.stop().finally(() => this.sender.close());
    return this.stopping;
  }

  /** Mails a reply in its thread; throws DELIVERY_PERMANENT on a 5xx refusal, else DELIVERY_TRANSIENT. */
  async send(message: OutboundMessage): Promise<void> {
    const thread = message.threadId
      ? await this.store.thread(`${message.chatId}/${message.threadId}`)
      : undefined;
    const references = threadReferences(thread?.references ?? [], message.replyTo);
    await this.sender.send({
      id: message.id,
      to: message.chatId,
      subject: replySubject(thread?.subject ?? ''),
      references,
      markdown: message.content,
    });
  }

  /** Mail has no typing indicator. */
  startActivity(): void {}
  stopActivity(): void {}

  /**
   * One mail → at most one bus message. Rejects only when Redis failed, so the mail stays
   * unread and after the cursor, and is taken again.
   */
  private async handleMail(source: Buffer, fallbackId: string): Promise<HandleOutcome> {
    const mail = await simpleParser(source, {
      skipImageLinks: true,
      skipTextToHtml: true,
      skipTextLinks: true,
    });
    const decision = decideMail(mail, {
      allowFrom: this.settings.allowFrom,
      ownAddress: this.settings.from ? addressOf(this.settings.from) : undefined,
      authservId: this.settings.authservId,
      requireAuth: this.settings.requireAuth,
      maxMediaBytes: this.deps.config.media.maxBytes,
      fallbackId: `<${fallbackId}>`,
    });
    if (decision.kind === 'ignore') {
      this.logger.info({ reason: decision.reason, detail: decision.detail }, 'mail ignored');
      await this.store.countIgnored(decision.reason);
      return 'ignored';
    }
    const { route, message } = decision;
    const log = this.logger.child({ chatId: route.chatId, threadId: route.threadId });
    await this.store.saveThread(route.threadKey, { subject: route.subject, references: route.references });
    await intake(message, {
      publish: (m) => this.deps.bus.publishInbound(m),
      ...busIntakePorts(this.deps.bus),
      reply: (text) => this.notice(route, text, message.id, log),
    });
    return 'taken';
  }

  /** An at-once command's answer, mailed in the thread; a failure is logged, not retried. */
  private async notice(route: EmailRoute, text: string, inboundId: string, log: Logger): Promise<void> {
    try {
      await this.sender.send({
        id: `notice:${inboundId}:${shortHash(text, 8)}`,
        to: route.chatId,
        subject: replySubject(route.subject),
        references: route.references,
        markdown: text,
      });
    } catch (err) {
      log.warn({ err: describeError(err) }, 'e-mail notice not delivered');
    }
  }
}

/** The thread's references up to the mail answered (`replyTo`), which is last. */
function threadReferences(references: string[], replyTo: string | undefined): string[] {
  if (replyTo === undefined) return references;
  const at = references.indexOf(replyTo);
  return at === -1 ? [...references, replyTo] : references.slice(0, at + 1);
}

/** `Magpie <bot@example.com>` → `bot@example.com`. */
export function addressOf(from: string): string {
  const open = from.lastIndexOf('<');
  const close = from.lastIndexOf('>');
  return (open !== -1 && close > open ? from.slice(open + 1, close) : from).trim().toLowerCase();
}
