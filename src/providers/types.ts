/**
 * The LLMProvider port: one chat-completion call with tools, and the message
 * shapes the agent keeps in sessions. Only providers/openai knows the SDK.
 */

/** One tool call requested by the model. `arguments` is the raw JSON text the model produced. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A part of a multimodal user message. Images are data: URLs or http(s) URLs. */
export type ContentPart = { type: 'text'; text: string } | { type: 'image'; url: string; mimeType?: string };

/** A message as the agent stores and sends it (provider-neutral, camelCase). */
export type ChatMessage =
  | {
      role: 'system';
      content: string;
      /**
       * Leading characters of `content` that are the same for every session (identity, tools,
       * bootstrap files, skills): a provider may put a prompt-cache breakpoint there.
       */
      staticChars?: number;
    }
  | { role: 'user'; content: string | ContentPart[]; name?: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name?: string; content: string };

/** A recording to transcribe. */
export interface AudioFile {
  bytes: Uint8Array;
  /** Its file name, e.g. `voice.ogg`: the endpoint may tell the format by the extension. */
  fileName: string;
  mimeType: string;
}

/** A tool offered to the model; `parameters` is a JSON Schema object. */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface Usage {
  /** Every prompt token, cached ones included. */
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** Prompt tokens served from the provider's prompt cache (part of promptTokens); absent when not reported. */
  cachedTokens?: number;
  /** Prompt tokens written to the provider's cache by this call (part of promptTokens); absent when not reported. */
  cacheWriteTokens?: number;
}

export interface ChatRequest {
  messages: ChatMessage[];
  /** Omitted from the request when empty. */
  tools?: ToolDefinition[];
  /** Overrides the provider's default model. */
  model?: string;
  /**
   * The conversation the call belongs to (the session key): calls with one key begin with the same
   * bytes. A provider may send a hash of it as a prompt-cache hint; the key itself never leaves.
   */
  cacheKey?: string;
  maxTokens?: number;
  temperature?: number;
  /**
   * Accept a completion with neither text nor tool calls (a silent turn, e.g. after the message
   * tool already answered). Otherwise it is a PROVIDER_EMPTY_RESPONSE error. @defaultValue false
   */
  allowEmpty?: boolean;
  /**
   * The caller has another model to turn to: a failure that a retry would only delay (unreachable,
   * a time-out, a Retry-After longer than the retry delays allow) is thrown at once. @defaultValue false
   */
  failFast?: boolean;
  /** Aborts the HTTP request; the call then rejects with CancelledError. */
  signal?: AbortSignal;
  /** Streaming text deltas as they arrive. */
  onDelta?: (text: string) => void;
}

export interface ChatResponse {
  /** Final text ('' when the model only called tools). Reasoning fields are never included. */
  content: string;
  toolCalls: ToolCall[];
  finishReason: string | null;
  usage: Usage | undefined;
  model: string | undefined;
  /**
   * Which of several configured models answered (a provider that falls back): its id, and how
   * many models before it in this call's order failed or were cooling down (0: the first choice).
   */
  answeredBy?: { model: string; fallbacks: number };
}

/** One model a provider can answer with (the FallbackProvider's configured models). */
export interface ModelInfo {
  /** The name chats pick it by (`/model`), status and metrics show. */
  id: string;
  /** The model name sent to the endpoint. */
  model: string;
  /** The endpoint, without credentials. */
  baseURL: string;
  /** Whether it takes images. */
  vision: boolean;
}

/** A model and, when it is cooling down after failures, for how long and why. */
export interface ModelAvailability {
  model: ModelInfo;
  cooling?: { leftMs: number; failures: number; reason: string };
}

/**
 * The port every LLM back-end implements. Errors are ProviderError with codes
 * PROVIDER_AUTH, PROVIDER_UNREACHABLE, PROVIDER_RATE_LIMITED, PROVIDER_SERVER,
 * PROVIDER_BAD_REQUEST, PROVIDER_BAD_RESPONSE, PROVIDER_EMPTY_RESPONSE (a completion with no
 * choice, or with neither text nor tool calls unless `allowEmpty`) or CONTEXT_LENGTH_EXCEEDED;
 * an aborted signal gives CancelledError.
 */
export interface LLMProvider {
  /** The default model name. */
  readonly model: string;
  chat(request: ChatRequest): Promise<ChatResponse>;
  /** Model ids the endpoint lists (GET /models). */
  listModels?(signal?: AbortSignal): Promise<string[]>;
  /** Speech to text through /audio/transcriptions. */
  transcribe?(audio: AudioFile, signal?: AbortSignal): Promise<string>;
  /**
   * The models it chooses among, in fallback order, the default first; `ChatRequest.model` may name
   * any of their ids. Absent: the provider has just `model`.
   */
  readonly models?: readonly ModelInfo[];
  /** The model a call asking for `model` (an id; default: the first) would try first now: the first not cooling down. */
  nextModel?(model?: string): Promise<ModelInfo>;
  /** Each model with its cool-down, if any (for /status). */
  availability?(): Promise<ModelAvailability[]>;
}
