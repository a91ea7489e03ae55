/**
 * A local SMTP server for tests (the `smtp-server` package) on a free
 * 127.0.0.1 port: plain (no STARTTLS), any login or none, and every mail it
 * takes parsed and kept. `refuse` makes it answer the next mails with an SMTP
 * error (a 4xx or 5xx reply) instead.
 */
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { freePort } from './redis-server.js';
import { waitFor } from './wait-for.js';

/** A mail the server took. */
export interface CaughtMail {
  to: string[];
  subject: string;
  messageId: string;
  inReplyTo: string | undefined;
  references: string[];
  /** The text part, trailing whitespace removed. */
  text: string;
  html: string | undefined;
  header(name: string): string | undefined;
  parsed: ParsedMail;
}

export interface FakeSmtp {
  port: number;
  /** `smtp://127.0.0.1:<port>` */
  url: string;
  mails: CaughtMail[];
  /** How many times a mail was offered (taken or refused). */
  attempts: number;
  /** Answers the next `times` mails with `code message` (e.g. 451 or 550). */
  refuse(code: number, times?: number): void;
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeSmtp(): Promise<FakeSmtp> {
  const port = await freePort();
  const mails: CaughtMail[] = [];
  let refusal: { code: number; left: number } | undefined;
  const fake: FakeSmtp = {
    port,
    url: `smtp://127.0.0.1:${port}`,
    mails,
    attempts: 0,
    refuse(code, times = 1) {
      refusal = { code, left: times };
    },
    async waitFor(predicate, timeoutMs = 20_000) {
      await waitFor(predicate, timeoutMs, 'the SMTP server to catch mail');
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    logger: false,
    onAuth(_auth, _session, callback) {
      callback(null, { user: 'test' });
    },
    onData(stream, _session, callback) {
      fake.attempts++;
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (refusal && refusal.left > 0) {
          refusal.left--;
          const err = Object.assign(new Error(`refused by the test (${refusal.code})`), {
            responseCode: refusal.code,
          });
          callback(err);
          return;
        }
        simpleParser(Buffer.concat(chunks)).then((parsed) => {
          mails.push(caught(parsed));
          callback();
        }, callback);
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return fake;
}

function caught(parsed: ParsedMail): CaughtMail {
  const to = [parsed.to ?? []].flat().flatMap((a) => a.value.map((v) => (v.address ?? '').toLowerCase()));
  const refs = parsed.references;
  return {
    to,
    subject: parsed.subject ?? '',
    messageId: parsed.messageId ?? '',
    inReplyTo: parsed.inReplyTo,
    references: refs === undefined ? [] : Array.isArray(refs) ? refs : [refs],
    text: (parsed.text ?? '').trimEnd(),
    html: parsed.html || undefined,
    header(name) {
      const value = parsed.headers.get(name.toLowerCase());
      return value === undefined ? undefined : String(value);
    },
    parsed,
  };
}

/** What a test mail says and how it is dressed. */
export interface TestMail {
  from: string;
  to?: string;
  subject?: string;
  messageId: string;
  /** The thread so far, root first (References; the last is In-Reply-To). */
  references?: string[];
  body: string;
  /** Extra header lines, written above the rest in this order (Authentication-Results, Auto-Submitted, …). */
  headers?: string[];
}

/** A raw RFC 5322 mail, CRLF line ends. */
export function rawMail(mail: TestMail): string {
  const refs = mail.references ?? [];
  const lines = [
    ...(mail.headers ?? []),
    `From: ${mail.from}`,
    `To: ${mail.to ?? 'magpie@bot.test'}`,
    `Subject: ${mail.subject ?? 'Hello'}`,
    `Message-ID: ${mail.messageId}`,
    `Date: ${new Date().toUTCString()}`,
    ...(refs.length > 0 ? [`In-Reply-To: ${refs.at(-1)}`, `References: ${refs.join(' ')}`] : []),
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    ...mail.body.split('\n'),
    '',
  ];
  return lines.join('\r\n');
}

/** The Authentication-Results line of the receiving server `authservId` for a DMARC pass of `domain`. */
export function dmarcPass(authservId: string, domain: string): string {
  return `Authentication-Results: ${authservId}; spf=pass smtp.mailfrom=${domain}; dkim=pass header.d=${domain}; dmarc=pass (p=reject) header.from=${domain}`;
}
