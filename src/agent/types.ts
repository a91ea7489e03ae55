/**
 * The agent core's public surface, as seen by the worker, the CLI and the
 * scheduler. AgentLoop (agent/loop.ts) implements AgentRunner.
 */

import type { TurnApprovals } from '../approvals/ports.js';
import type { ParkedCall, PendingApproval } from '../messages/approval.js';
import type { InboundMessage, OutboundMessageInput } from '../messages/messages.js';
import type { TurnMetrics } from '../messages/turn-metrics.js';
import type { ToolCall } from '../providers/types.js';
import type { OutboundSink } from './ports.js';

export type { ToolCallMetric, TurnMetrics, TurnOutcome } from '../messages/turn-metrics.js';

export interface TurnOptions {
  /**
   * The turn's span as W3C trace context (the worker's, when tracing is on): helpers and
   * assistants it asks continue its trace. @defaultValue none
   */
  trace?: { traceparent: string; tracestate?: string };
  /** Aborts the turn (LLM request and tools); outstanding tool calls get "operation cancelled by user". */
  signal?: AbortSignal;
  /**
   * Called between LLM iterations: messages of this session that arrived while
   * the turn ran. They join the running turn as user messages.
   */
  drainPending?: () => Promise<InboundMessage[]>;
  /** Where the message tool sends during this turn (the worker assigns deterministic ids). */
  outbound?: OutboundSink;
  /** Called once per LLM iteration (status/dashboard: "iteration n"); a live view starts the new call's text afresh. */
  onIteration?: (iteration: number) => void;
  /** The model's text as it is written (each LLM call's deltas; live replies). */
  onDelta?: (text: string) => void;
  /** A tool call about to run (live replies show "running: web_search …"). */
  onTool?: (call: ToolCall) => void;
  /** Delegation depth of the turn: 0 for a user's turn, +1 per helper level. @defaultValue 0 */
  depth?: number;
  /** Ask before risky tool calls (MAGPIE_APPROVAL). Absent: nothing asks. */
  approvals?: TurnApprovals;
  /**
   * Runs each write to the session while this attempt still answers the turn, no later attempt
   * claiming it meanwhile; false, without running it, once a later attempt of this turn has taken
   * it over (a worker's lock lost; bus/turn-fence.ts). The turn then stops without writing, so the
   * session does not get a stalled attempt's messages after the later one's. @defaultValue runs it
   */
  answering?: (write: () => Promise<void>) => Promise<boolean>;
}

export interface TurnResult {
  sessionKey: string;
  /**
   * The reply to deliver to the origin chat, or undefined when there is
   * nothing to deliver (the message tool already answered, a silent turn).
   */
  reply: string | undefined;
  /** Where the reply goes (the origin chat; for system messages the chat named in them). */
  target: Pick<OutboundMessageInput, 'channel' | 'chatId' | 'threadId' | 'replyTo'>;
  metrics: TurnMetrics;
  /** Set when the turn parked (outcome `waiting`): the question to ask and what it needs to resume. */
  parked?: ParkedTurn;
  /**
   * A redone turn's answers an earlier attempt stored for some of its messages (its worker died,
   * or its reply could not be queued, after storing them): sent again before `reply`, each under
   * the id its first message names, as the earlier attempt sent it. @defaultValue none
   */
  stored?: StoredAnswer[];
  /**
   * The first message `reply` answers, when earlier messages of the batch were answered by an
   * earlier attempt (`stored`): it names the reply's id. @defaultValue the batch's first
   */
  answersFrom?: string;
}

/** An answer stored in the session and the inbound messages (ids, in order) it answers. */
export interface StoredAnswer {
  ids: string[];
  content: string;
}

/** A turn parked on a question: the first waiting call is asked about, the rest wait behind it. */
export interface ParkedTurn {
  call: ParkedCall;
  summary: string;
  rule?: { tool: string; prefix?: string };
  rest: ParkedCall[];
  iteration: number;
  taint: string | undefined;
  request: {
    channel: string;
    chatId: string;
    threadId?: string;
    sessionKey: string;
    senderName?: string;
    isGroup?: boolean;
    ids: string[];
    noHistory?: boolean;
    replyTo?: string;
  };
}

/** How a parked call was settled, as the resumed turn acts on it. */
export type ParkedDecision = 'run' | 'denied' | 'timeout' | 'cancelled' | 'interrupted';

export interface AgentRunner {
  /**
   * Runs one turn for one or more messages of the same session (in order):
   * system channel → processSystemMessage; slash commands; else runAgentLoop.
   */
  processMessage(messages: InboundMessage | InboundMessage[], options?: TurnOptions): Promise<TurnResult>;
  /** A direct message from the CLI (`magpie agent`), same path as the bus. */
  processDirect(content: string, sessionKey: string, options?: TurnOptions): Promise<TurnResult>;
  /** A heartbeat turn: no history, its own session `heartbeat`. */
  processHeartbeat(prompt: string, options?: TurnOptions): Promise<TurnResult>;
  /** Goes on with a turn parked on an approval question once it was settled (`decision`). */
  resumeTurn?(pending: PendingApproval, decision: ParkedDecision, options?: TurnOptions): Promise<TurnResult>;
}
