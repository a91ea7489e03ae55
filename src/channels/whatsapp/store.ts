/**
 * What the WhatsApp channel keeps in Redis, as a port (the store is
 * src/bus/whatsapp-store.ts, passed in by the descriptor): the status
 * callbacks about the messages it sent (sent, delivered, read, failed),
 * each recorded once however often Meta delivers it; a failed one is kept
 * among the delivery failures `magpie status` shows.
 */

/** One status callback. */
export interface WhatsAppStatusRecord {
  /** The message's id (`wamid.…`). */
  messageId: string;
  /** `sent`, `delivered`, `read`, `failed` (or whatever else Meta reports). */
  status: string;
  /** The recipient's number (the chat). */
  recipient: string;
  /** When Meta says it happened (ms since the epoch). */
  at: number;
  /** Why, for `failed`: Meta's error code and title. */
  reason?: string;
}

/** The WhatsApp channel's Redis store. */
export interface WhatsAppStore {
  /** Records a status; false when this status of this message was recorded before (a redelivery). */
  recordStatus(record: WhatsAppStatusRecord): Promise<boolean>;
  /** The statuses recorded for a message: status → when (ms). */
  statuses(messageId: string): Promise<Record<string, number>>;
}
