/** `magpie doctor`'s e-mail check: logs in to IMAP (opens the mailbox) and to SMTP; sends nothing. */
import { ImapFlow } from 'imapflow';
import { describeError } from '../../errors/index.js';
import { type Check, type CheckResult, failed, pass, skipped } from '../../ops/doctor.js';
import { imapSettings, smtpSettings } from './connection.js';
import { MailSender } from './mail-sender.js';

interface EmailCheckSettings {
  imapUrl: string | undefined;
  smtpUrl: string | undefined;
  from: string | undefined;
  authservId: string | undefined;
  requireAuth: 'dmarc' | 'dkim' | 'off';
}

/** The IMAP login and mailbox, then the SMTP login (skipped while the channel is off). */
export function emailCheck(settings: EmailCheckSettings): Check {
  return {
    name: 'email',
    timeoutMs: 20_000,
    async run() {
      if (!settings.imapUrl || !settings.smtpUrl) return skipped('EMAIL_IMAP_URL / EMAIL_SMTP_URL not set');
      const results: CheckResult[] = [await checkImap(settings.imapUrl), await checkSmtp(settings)];
      if (settings.requireAuth === 'off') {
        results.push(
          failed(
            'EMAIL_REQUIRE_AUTH=off: anyone can write as an allowed sender',
            'set EMAIL_REQUIRE_AUTH=dmarc and EMAIL_AUTHSERV_ID',
          ),
        );
      } else if (!settings.authservId) {
        results.push(
          failed(
            'EMAIL_AUTHSERV_ID is not set: no mail can be trusted',
            "put your mail server's authserv-id (the first word of its Authentication-Results headers) in EMAIL_AUTHSERV_ID",
          ),
        );
      }
      return results;
    },
  };
}

async function checkImap(url: string): Promise<CheckResult> {
  const s = imapSettings(url);
  const client = new ImapFlow({
    host: s.host,
    port: s.port,
    secure: s.secure,
    ...(s.requireStartTls ? { doSTARTTLS: true } : {}),
    auth: { user: s.user, pass: s.pass },
    logger: false,
    disableAutoIdle: true,
  });
  try {
    await client.connect();
    const status = await client.status(s.mailbox, { messages: true, unseen: true });
    await client.logout();
    const counts = status ? `${status.messages ?? 0} messages, ${status.unseen ?? 0} unseen` : 'opened';
    return pass(`IMAP ${s.key}: ${counts}`);
  } catch (err) {
    client.close();
    return failed(
      `IMAP ${s.key}: ${describeError(err)}`,
      'check EMAIL_IMAP_URL (host, port, user, password, mailbox)',
    );
  }
}

async function checkSmtp(settings: EmailCheckSettings): Promise<CheckResult> {
  const s = smtpSettings(settings.smtpUrl!);
  const sender = new MailSender(s, settings.from ?? 'magpie@localhost');
  try {
    await sender.verify();
    return pass(`SMTP ${s.host}:${s.port} accepted the login`);
  } catch (err) {
    return failed(
      `SMTP ${s.host}:${s.port}: ${describeError(err)}`,
      'check EMAIL_SMTP_URL (host, port, user, password)',
    );
  } finally {
    sender.close();
  }
}
