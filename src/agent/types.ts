/**
 * The agent core's public surface, as seen by the worker, the CLI and the
 * scheduler. AgentLoop (agent/loop.ts) implements AgentRunner.
 */
import type { InboundMessage, OutboundMessageInput } from '../messages/messages.js';
import type { ToolCall } from '../providers/types.js';
import type { OutboundSink } from './ports.js';

export interface ToolCallMetric {
  name: string;
  ms: number;
  ok: boolean;
}

/** Figures for one turn; logged as one line and recorded for the dashboard. */
export interface TurnMetrics {
  sessionKey: string;
  llmCalls: number;
  /** Prompt tokens, cached ones included. */
  promptTokens: number;
  /** Prompt tokens the provider served from its cache (0 when it reported none). */
  cachedTokens?: number;
  /** Prompt tokens written to the provider's cache (0 when it reported none). */
  cacheWriteTokens?: number;
  completionTokens: number;
  toolCalls: ToolCallMetric[];
  wallMs: number;
  outcome: TurnOutcome;
  /** The model (its configured id) that gave the turn's last answer, when the provider says. */
  model?: string;
  /** LLM calls answered by a model other than the chat's first choice (a fallback). */
  fallbacks?: number;
  /** LLM calls by the model that answered them. */
  models?: Record<string, number>;
}

/**
 * How a turn ended. `loop`: stopped for repeating the same tool call;
 * `context_full`: the conversation no longer fits the model's window even after compaction.
 */
export type TurnOutcome =
  | 'ok'
  | 'cancelled'
  | 'error'
  | 'max_iterations'
  | 'command'
  | 'skipped'
  | 'loop'
  | 'context_full';

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
