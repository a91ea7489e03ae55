/**
 * The Channel port. An adapter turns platform events into InboundMessages
 * (after the access check) and delivers OutboundMessages. It never calls the LLM.
 */

import type { PairingStore } from '../bus/pairing-store.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../log/index.js';
import type { AnswerOutcome, ApprovalAnswer } from '../messages/approval.js';
import type { LiveUpdate } from '../messages/live-update.js';
import type { InboundMessageInput, OutboundMessage } from '../messages/messages.js';
import type { LiveRecords } from './live/surface.js';

/** What a channel needs from the bus. */
export interface ChannelBus {
  /** Validates and durably queues an inbound message. Rejects when Redis is away. */
  publishInbound(message: InboundMessageInput): Promise<void>;
  /** `/stop` for a session: aborts its running turn (or cancels its waiting question); queued messages stay. */
  cancel(sessionKey: string): Promise<boolean>;
  /** `/approve CODE`, `/deny CODE` or a button: settles the session's approval question once. */
  answerApproval(sessionKey: string, answer: ApprovalAnswer): Promise<AnswerOutcome>;
  /**
   * What the channel showed of turns' live replies (a redone turn continues its preview).
   * @defaultValue kept in the gateway's memory only
   */
  readonly liveRecords?: LiveRecords;
}

export interface Channel {
  /** Its descriptor's name (`cli`, `web`, …): also the suffix of its outbound queue. */
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /**
   * Delivers one message (chunking and formatting inside). A message with `live` set completes
   * that turn's preview in place when one is showing. Throws AppError DELIVERY_PERMANENT /
   * DELIVERY_TRANSIENT.
   */
  send(message: OutboundMessage): Promise<void>;
  /**
   * Shows a snapshot of an answer being written (live replies). Absent: the channel shows whole
   * replies only. Never throws: a preview that cannot be shown is logged, and the final reply
   * still arrives through `send`.
   */
  preview?(update: LiveUpdate): Promise<void>;
  /** Shows activity (typing) in a chat until `stopActivity` or the next reply. */
  startActivity(chatId: string, threadId?: string): void;
  stopActivity(chatId: string, threadId?: string): void;
}

/** Everything a channel factory receives from the composition root. */
export interface ChannelDeps {
  config: Config;
  bus: ChannelBus;
  logger: Logger;
  /** Pairing codes and approved senders, shared by every gateway. */
  pairing: PairingStore;
}
