/**
 * The AgentLoop's options and the narrow ports it needs from the context
 * builder (ContextBuilder satisfies it) — kept apart so the loop reads as the
 * turn it runs.
 */
import type { ApprovalRules } from '../approvals/ports.js';
import type { Logger } from '../log/index.js';
import type { TokenPrices } from '../messages/token-counts.js';
import type { ChatMessage, LLMProvider } from '../providers/types.js';
import type { SessionStore } from '../sessions/types.js';
import type { HookFactory } from './hooks/types.js';
import type { ModelChoiceStore, OutboundSink, StateStore, UsageView } from './ports.js';
import type { PromptNote } from './prompt-note.js';
import type { VoiceCommandPorts } from './slash-commands.js';
import type { LoopTools } from './tool-batch.js';
import type { ToolCallLimits } from './tool-call-limits.js';

/** What the system prompt and the context block say about the current chat. */
export interface PromptSession {
  channel: string;
  chatId: string;
  sessionKey: string;
  /** Summary of the conversation before the history that is sent. */
  summary?: string;
  /** Who sent the turn's message (in its context block). */
  senderName?: string;
  isGroup?: boolean;
}

/** What the loop needs from the ContextBuilder. */
export interface LoopContextBuilder {
  buildMessages(args: {
    history: ChatMessage[];
    session: PromptSession;
    current: ChatMessage[];
  }): Promise<ChatMessage[]>;
  /**
   * The note stored with the first new user message of a turn (its context block: time, sender,
   * memory written since; see prompt-note.ts). Builders without it send messages as they are.
   */
  noteFor?(args: { known: readonly ChatMessage[]; session: PromptSession }): Promise<PromptNote>;
}

/** What `new AgentLoop(...)` takes; defaults are merged (and checked) in the constructor. */
export interface AgentLoopOptions {
  provider: LLMProvider;
  tools: LoopTools;
  sessions: SessionStore;
  context: LoopContextBuilder;
  logger: Logger;
  /** Where the message tool sends when the turn brings no sink of its own. */
  outbound: OutboundSink;
  /** Records the last user-facing chat (heartbeat replies go there). */
  state?: StateStore;
  /** Absolute, real path of the workspace. */
  workspace: string;
  /** LLM calls per turn. @defaultValue 20 */
  maxIterations?: number;
  /** Overrides the provider's default model. */
  model?: string;
  /**
   * The default model's context window in tokens (other models of a falling-back provider: the
   * table's). @defaultValue the model's entry in the table of model-limits.ts (128k when unknown)
   */
  contextTokens?: number;
  /** Each chat's model (`/model`). @defaultValue in memory (forgotten at exit) */
  modelChoices?: ModelChoiceStore;
  /** Summarise (in the background) when the context history passes this. @defaultValue 60% of contextTokens, at most 19_200 */
  summarizeAtTokens?: number;
  /** Messages kept verbatim after a summary. @defaultValue 8 */
  keepLastMessages?: number;
  /**
   * Limits on one response's tool calls: arguments over `maxArgumentBytes` are refused and stored
   * cut down; calls past `maxCallsPerResponse` are answered "too many tool calls at once".
   * @defaultValue `{ maxArgumentBytes: 262_144 (256 KiB), maxCallsPerResponse: 16 }`
   */
  toolCallLimits?: Partial<ToolCallLimits>;
  /** Transcribe voice through the provider. @defaultValue false */
  transcribe?: boolean;
  /** Makes each turn's iteration hooks. @defaultValue defaultHooks (trim tool results over 8,000 chars, loop detection) */
  hooks?: HookFactory;
  /**
   * Run a silent memory-flush turn before a session is compacted.
   * @defaultValue false (buildAgent turns it on)
   */
  memoryFlush?: boolean;
  /** Tools of the memory-flush turn. @defaultValue the loop's tools */
  flushTools?: LoopTools;
  /** Prices per million tokens: /status shows an estimated cost. @defaultValue none (no cost shown) */
  prices?: TokenPrices;
  /** The chats' "always allow" rules, for /approvals. @defaultValue none: /approvals says approvals are off */
  approvalRules?: ApprovalRules;
  /** /usage's figures (the budget in the daemon). @defaultValue none: /usage says usage is not kept */
  usage?: UsageView;
  /** /forget: removes matching facts from MEMORY.md, recorded in its history. @defaultValue none: /forget says it cannot */
  forget?: (argument: string | undefined) => Promise<string>;
  /** Each chat's `/voice` choice, and whether an engine speaks (MAGPIE_TTS). @defaultValue in memory, nothing spoken */
  voice?: VoiceCommandPorts;
}
