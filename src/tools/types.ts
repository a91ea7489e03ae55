/**
 * The Tool port: a name, a description, zod parameters (turned into JSON
 * Schema for the model) and an execute function. A tool's failure is a
 * ToolResult with isError, which the model reads — not an exception.
 */
import type { z } from 'zod';
import type { Logger } from '../log/index.js';
import type { OutboundMessageInput } from '../messages/messages.js';
import type { ContentPart } from '../providers/types.js';

/** Per-call context: which chat the turn belongs to, and how to reach it. Built fresh for every turn. */
export interface ToolContext {
  channel: string;
  chatId: string;
  threadId?: string;
  sessionKey: string;
  /** Absolute, real path of the workspace. */
  workspace: string;
  /** Aborted by /stop, Ctrl-C or shutdown. */
  signal: AbortSignal;
  logger: Logger;
  /** Sends a message to a chat now (the message tool); ids are assigned by the sink. */
  send(message: Omit<OutboundMessageInput, 'id'>): Promise<void>;
  /** Delegation depth: 0 for a user's turn, +1 for each helper level. */
  depth: number;
  /** The turn's span (W3C trace context) when tracing is on, for the work it hands on (helpers, ask_agent). */
  trace?: { traceparent: string; tracestate?: string };
}

export interface ToolResult {
  /** What the model reads. */
  forLLM: string;
  /** Optional text shown to the user directly. */
  forUser?: string;
  isError?: boolean;
  /**
   * Images for a vision model (an MCP screenshot): the loop attaches them in a
   * user message after the tool results; the session keeps only `forLLM`.
   */
  images?: ToolImage[];
}

/** An image a tool returns: a data: URL and its type. */
export type ToolImage = Extract<ContentPart, { type: 'image' }>;

export interface Tool<P extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly description: string;
  readonly parameters: P;
  /**
   * The parameters as JSON Schema, for tools that come with one (MCP tools):
   * sent to the model instead of the schema made from `parameters`.
   */
  readonly jsonSchema?: Record<string, unknown>;
  /**
   * This tool's time limit per call in ms, fixed or from the call's
   * arguments (exec: its own timeout plus a grace). On expiry the registry
   * aborts `ctx.signal` and answers "timed out". Unset: the registry's default.
   */
  readonly timeLimitMs?: number | ((args: z.infer<P>) => number);
  /**
   * True when the tool only reads (the catalog's flag; an MCP tool's server
   * marks it with `readOnlyHint`). Unset: not read-only.
   */
  readonly readOnly?: boolean;
  /**
   * What the tool returns is text from outside that may try to steer the model (a web page,
   * search results, an MCP server's answer): after it, every risky call asks the owner.
   */
  readonly untrustedOutput?: string;
  /** The tool belongs to an MCP server. */
  readonly mcp?: boolean;
  execute(args: z.infer<P>, ctx: ToolContext): Promise<ToolResult>;
}

/** Helper for a successful result. */
export const ok = (forLLM: string, forUser?: string): ToolResult =>
  forUser === undefined ? { forLLM } : { forLLM, forUser };
/** Helper for a failed result the model should read and act on. */
export const fail = (forLLM: string): ToolResult => ({ forLLM: `Error: ${forLLM}`, isError: true });
