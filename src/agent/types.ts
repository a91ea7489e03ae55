/**
 * The agent core's public surface, as seen by the worker, the CLI and the
 * scheduler. AgentLoop (agent/loop.ts) implements AgentRunner.
 */
import type { InboundMessage, OutboundMessageInput } from '../messages/messages.js';
import type { TurnMetrics } from '../messages/turn-metrics.js';
import type { ToolCall } from '../providers/types.js';
import type { OutboundSink } from './ports.js';

export type { ToolCallMetric, TurnMetrics, TurnOutcome } from '../messages/turn-metrics.js';

export interface TurnOptions {
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
}

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
}
