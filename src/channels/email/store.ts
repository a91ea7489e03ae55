/**
 * What the e-mail channel keeps in Redis, as a port (the store is
 * src/bus/email-store.ts, passed in by the descriptor): how far each mailbox
 * was read (the last UID taken, under the mailbox's UIDVALIDITY), each
 * thread's subject and references (so a reply carries In-Reply-To,
 * References and `Re:`), and counts of the mail it ignored.
 */

/** How far a mailbox was read: UIDs above `lastUid` are new while `uidValidity` stays the same. */
export interface MailboxCursor {
  uidValidity: string;
  lastUid: number;
}

/** A conversation's mail headers, as the last accepted message left them. */
export interface EmailThread {
  /** The subject as the user wrote it (without any `Re:`). */
  subject: string;
  /** The thread's Message-IDs, oldest first, the last accepted one last (capped). */
  references: string[];
}

/** The e-mail channel's Redis store. */
export interface EmailStore {
  cursor(mailbox: string): Promise<MailboxCursor | undefined>;
  saveCursor(mailbox: string, cursor: MailboxCursor): Promise<void>;
  thread(key: string): Promise<EmailThread | undefined>;
  saveThread(key: string, thread: EmailThread): Promise<void>;
  /** Counts one ignored mail under its reason (`unauthenticated`, `auto`, `not-allowed`, …). */
  countIgnored(reason: string): Promise<void>;
  /** The ignored mail counted so far, by reason. */
  ignored(): Promise<Record<string, number>>;
}
