/**
 * What the turn worker needs of the bus: the methods it calls, no more. The
 * Bus (src/bus/bus.ts) implements it; the composition root passes it in.
 */

import type { ActivityEvent } from '../bus/activity.js';
import type { RedisApprovals } from '../bus/approvals.js';
import type { Consumer, ConsumerTuning, JobProcessor } from '../bus/consumer.js';
import type { Mailbox } from '../bus/mailbox.js';
import type { TurnFence } from '../bus/turn-fence.js';
import type { TurnRecorder, TurnRecorderOptions } from '../bus/turn-recorder.js';
import type { PendingApproval } from '../messages/approval.js';
import type { LiveUpdate } from '../messages/live-update.js';
import type { OutboundMessageInput } from '../messages/messages.js';

export interface TurnBus {
  /** Takes jobs of `queue` (the turn jobs of `inbound`). */
  consume(queue: string, processor: JobProcessor, tuning?: ConsumerTuning): Consumer;
  /** A session's mailbox: the pending messages of its turn. */
  mailbox(sessionKey: string): Mailbox;
  publishOutbound(input: OutboundMessageInput): Promise<void>;
  publishLive(update: LiveUpdate): Promise<void>;
  publishActivity(channel: string, event: ActivityEvent): Promise<void>;
  /** `/stop` requests; returns the unsubscribe. */
  onCancel(handler: (sessionKey: string) => void): Promise<() => Promise<void>>;
  turnRecorder(options: Omit<TurnRecorderOptions, 'redis' | 'prefix'>): TurnRecorder;
  /** Which attempt of a session's turn may answer it (bus/turn-fence.ts). */
  readonly turnFence: Pick<TurnFence, 'claim' | 'holding'>;
  /** Approval questions and rules (bus/approvals.ts). */
  readonly approvals: Pick<RedisApprovals, 'get' | 'move' | 'finish' | 'rules' | 'markAsked'>;
  /** Stores a new question and schedules its time-out. */
  parkApproval(pending: PendingApproval): Promise<void>;
  /** Settles a question that is still waiting as timed out; true when it did. */
  expireApproval(sessionKey: string, code: string): Promise<boolean>;
  /** Adds a turn job for every session whose mailbox holds messages (deduplicated); resolves to how many. */
  wakePendingMailboxes(): Promise<number>;
}
