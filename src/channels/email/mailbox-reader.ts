/**
 * Reading one IMAP mailbox with imapflow: at connect and whenever the server
 * reports new mail (IDLE), every message after the last UID taken — kept in
 * Redis with the mailbox's UIDVALIDITY — goes to `handle` in UID order. The
 * cursor moves past a message only after `handle` resolved (the message is
 * on the bus, or was ignored), and a taken message is marked `\Seen` then,
 * so a crash loses nothing and mail that came while magpie was down is taken
 * exactly once after the start. A mailbox never read before (or whose
 * UIDVALIDITY changed) is read from its unseen messages.
 *
 * A dropped connection is opened again with a growing delay (imapflow does
 * not reconnect by itself); a `handle` that failed (Redis away) is retried.
 */
import { ImapFlow } from 'imapflow';
import { AppError, ConfigError, describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { ImapSettings } from './connection.js';
import type { EmailStore } from './store.js';

/** What became of a message: `taken` (on the bus: mark it \Seen) or `ignored` (leave its flags). */
export type HandleOutcome = 'taken' | 'ignored';

export interface MailboxReaderOptions {
  settings: ImapSettings;
  store: Pick<EmailStore, 'cursor' | 'saveCursor'>;
  logger: Logger;
  /** One message's raw source (at most `maxMessageBytes`); rejects when it could not be put on the bus. */
  handle(source: Buffer, id: { uid: number; uidValidity: string }): Promise<HandleOutcome>;
  /** Bytes of one message read at most (larger ones are cut). */
  maxMessageBytes: number;
  /** First delay before reconnecting or retrying a failed message (doubles up to a minute). @defaultValue 1000 */
  retryDelayMs?: number;
  /** Quiet time before IDLE starts (new mail is reported during IDLE). @defaultValue 1000 */
  idleDelayMs?: number;
}

const MAX_RETRY_MS = 60_000;

export class MailboxReader {
  private client: ImapFlow | undefined;
  private stopped = false;
  private scanning: Promise<void> | undefined;
  private again = false;
  private retryMs: number;
  private timer: NodeJS.Timeout | undefined;
  private readonly log: Logger;

  constructor(private readonly options: MailboxReaderOptions) {
    this.retryMs = options.retryDelayMs ?? 1000;
    this.log = options.logger.child({ mailbox: options.settings.key });
  }

  /** Logs in and reads what is new; a refused login is a ConfigError, an unreachable server transient. */
  async start(): Promise<void> {
    await this.connect();
  }

  /** Closes the connection; a scan in progress stops after its current message. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    await this.scanning?.catch(() => undefined);
    if (client) await client.logout().catch(() => client.close());
  }

  private async connect(): Promise<void> {
    const { settings } = this.options;
    const client = new ImapFlow({
      host: settings.host,
      port: settings.port,
      secure: settings.secure,
      ...(settings.requireStartTls ? { doSTARTTLS: true } : {}),
      auth: { user: settings.user, pass: settings.pass },
      logger: false,
      autoIdleDelay: this.options.idleDelayMs ?? 1000,
    });
    client.on('error', (err: unknown) => this.log.warn({ err: describeError(err) }, 'IMAP connection error'));
    client.on('exists', () => this.wake());
    client.on('close', () => {
      if (this.client !== client || this.stopped) return;
      this.client = undefined;
      this.log.warn('IMAP connection closed; reconnecting');
      this.later(() => this.reconnect());
    });
    try {
      await client.connect();
    } catch (err) {
      if ((err as { authenticationFailed?: boolean }).authenticationFailed) {
        throw new ConfigError(`the IMAP server refused the login in EMAIL_IMAP_URL: ${describeError(err)}`, {
          cause: err,
        });
      }
      throw new AppError('DELIVERY_TRANSIENT', `the IMAP server is unreachable: ${describeError(err)}`, {
        cause: err,
        transient: true,
      });
    }
    this.client = client;
    this.retryMs = this.options.retryDelayMs ?? 1000;
    this.log.info('IMAP mailbox connected');
    this.wake();
  }

  private async reconnect(): Promise<void> {
    if (this.stopped || this.client) return;
    try {
      await this.connect();
    } catch (err) {
      this.log.warn({ err: describeError(err) }, 'IMAP reconnect failed');
      this.later(() => this.reconnect());
    }
  }

  /** Runs `task` after the retry delay, which then doubles. */
  private later(task: () => Promise<void> | void): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void task(), this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
  }

  /** Scans now, or once more after the scan in progress. */
  private wake(): void {
    if (this.stopped) return;
    if (this.scanning) {
      this.again = true;
      return;
    }
    this.scanning = (async () => {
      try {
        do {
          this.again = false;
          await this.scan();
        } while (this.again && !this.stopped);
        this.retryMs = this.options.retryDelayMs ?? 1000;
      } catch (err) {
        this.log.warn({ err: describeError(err) }, 'new mail not taken; retrying');
        this.later(() => this.wake());
      } finally {
        this.scanning = undefined;
      }
    })();
  }

  private async scan(): Promise<void> {
    const client = this.client;
    if (!client) return;
    const { settings, store } = this.options;
    const lock = await client.getMailboxLock(settings.mailbox);
    try {
      const box = client.mailbox;
      if (!box) return;
      const uidValidity = String(box.uidValidity);
      const cursor = await store.cursor(settings.key);
      const known = cursor?.uidValidity === uidValidity ? cursor.lastUid : undefined;
      let uids: number[];
      if (box.exists === 0) uids = [];
      else if (known !== undefined) {
        const all = await client.fetchAll(`${known + 1}:*`, { uid: true }, { uid: true });
        uids = all.map((m) => m.uid).filter((uid) => uid > known);
      } else {
        uids = (await client.search({ seen: false }, { uid: true })) || [];
      }
      uids.sort((a, b) => a - b);
      for (const uid of uids) {
        if (this.stopped || this.client !== client) return;
        const message = await client.fetchOne(
          String(uid),
          { uid: true, source: { maxLength: this.options.maxMessageBytes } },
          { uid: true },
        );
        if (message !== false && message.source) {
          const outcome = await this.options.handle(message.source, { uid, uidValidity });
          if (outcome === 'taken') await client.messageFlagsAdd(String(uid), ['\\Seen'], { uid: true });
        }
        await store.saveCursor(settings.key, { uidValidity, lastUid: uid });
      }
      if (known === undefined) {
        // First read of this mailbox: everything below UIDNEXT at selection was looked at.
        const lastUid = Math.max(Number(box.uidNext) - 1, uids.at(-1) ?? 0);
        await store.saveCursor(settings.key, { uidValidity, lastUid });
      }
    } finally {
      lock.release();
    }
  }
}
