/**
 * EMAIL_IMAP_URL and EMAIL_SMTP_URL → connection settings. `imaps://` and
 * `smtps://` are TLS from the start; `imap://` and `smtp://` upgrade with
 * STARTTLS, which is required unless the server is on this machine (a loopback
 * address), so a password never crosses the network in the clear.
 */
import { ConfigError } from '../../errors/index.js';

/** Where to read mail. */
export interface ImapSettings {
  host: string;
  port: number;
  /** TLS from the start (imaps). */
  secure: boolean;
  /** STARTTLS: required (true) off loopback; used when offered (undefined) on loopback. */
  requireStartTls: boolean;
  user: string;
  pass: string;
  mailbox: string;
  /** `user@host:port/mailbox`: names the mailbox in logs and in Redis, without the password. */
  key: string;
}

/** Where to send mail. */
export interface SmtpSettings {
  host: string;
  port: number;
  secure: boolean;
  requireStartTls: boolean;
  user: string | undefined;
  pass: string | undefined;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || host.startsWith('127.');
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch (err) {
    if (err instanceof URIError) return text;
    throw err;
  }
}

/** `imaps://user:pass@host:993/INBOX` → settings; throws ConfigError for another scheme or no user. */
export function imapSettings(text: string): ImapSettings {
  const url = new URL(text);
  const secure = url.protocol === 'imaps:';
  if (!secure && url.protocol !== 'imap:') {
    throw new ConfigError(`EMAIL_IMAP_URL must start with imaps:// or imap:// (not ${url.protocol}//)`);
  }
  if (!url.username)
    throw new ConfigError('EMAIL_IMAP_URL has no user name (imaps://user:password@host/INBOX)');
  const host = url.hostname;
  const port = url.port ? Number(url.port) : secure ? 993 : 143;
  const mailbox = decode(url.pathname.replace(/^\//, '')) || 'INBOX';
  const user = decode(url.username);
  return {
    host,
    port,
    secure,
    requireStartTls: !secure && !isLoopback(host),
    user,
    pass: decode(url.password),
    mailbox,
    key: `${user}@${host}:${port}/${mailbox}`,
  };
}

/** `smtps://user:pass@host:465` or `smtp://…:587` → settings; throws ConfigError for another scheme. */
export function smtpSettings(text: string): SmtpSettings {
  const url = new URL(text);
  const secure = url.protocol === 'smtps:';
  if (!secure && url.protocol !== 'smtp:') {
    throw new ConfigError(`EMAIL_SMTP_URL must start with smtps:// or smtp:// (not ${url.protocol}//)`);
  }
  const host = url.hostname;
  return {
    host,
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    requireStartTls: !secure && !isLoopback(host),
    user: url.username ? decode(url.username) : undefined,
    pass: url.password ? decode(url.password) : undefined,
  };
}
