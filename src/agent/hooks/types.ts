/**
 * Iteration hooks ("effects"): small per-turn objects the agent
 * loop calls before each LLM call (they may rewrite the request, never the
 * session) and after each response (they may answer tool calls themselves or
 * stop the turn). A fresh set is made for every turn, so hooks keep per-turn
 * state in plain fields.
 */
import type { Logger } from '../../log/index.js';
import type { ChatMessage, ChatResponse } from '../../providers/types.js';

export interface BeforeCallContext {
  /** 1-based LLM call number within the turn. */
  iteration: number;
  /** The request's messages (system prompt first). Return a new array to change what is sent. */
  messages: ChatMessage[];
  log: Logger;
}

export interface AfterCallContext {
  iteration: number;
  response: ChatResponse;
  log: Logger;
}

/**
 * What a hook decides after a response: carry on; answer some tool calls
 * with the given text instead of running them (keyed by call id); or stop the
 * turn with `reply` as the final answer.
 */
export type HookDecision =
  | { action: 'continue' }
  | { action: 'answer'; results: ReadonlyMap<string, string> }
  | { action: 'stop'; reply: string };

export interface IterationHook {
  readonly name: string;
  /** Runs before each LLM call (again if the request is rebuilt after a compaction); returns the messages to send. */
  beforeCall?(ctx: BeforeCallContext): ChatMessage[];
  /** Runs after each response that has tool calls, before they run. */
  afterCall?(ctx: AfterCallContext): HookDecision;
}

/** Makes the hooks of one turn. */
export type HookFactory = () => IterationHook[];
