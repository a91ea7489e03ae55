/**
 * Fixtures for the agent-loop unit tests: a scripted LLMProvider (our own
 * port), a tiny context builder, a real JSONL session store in a temp folder
 * and a recording outbound sink.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { z } from 'zod';
import { AgentLoop, type AgentLoopOptions, type LoopContextBuilder } from '../../../src/agent/loop.js';
import type { OutboundSink, StateStore } from '../../../src/agent/ports.js';
import type { Logger } from '../../../src/log/index.js';
import type { InboundMessage, OutboundMessageInput } from '../../../src/messages/messages.js';
import type { ChatMessage, ChatRequest, ChatResponse, LLMProvider } from '../../../src/providers/types.js';
import { JsonlSessionStore } from '../../../src/sessions/jsonl-store.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import type { Tool, ToolResult } from '../../../src/tools/types.js';

/** One scripted answer: a response, an error to throw, or a function of the request. */
export type Script = Partial<ChatResponse> | Error | ((req: ChatRequest) => Promise<Partial<ChatResponse>>);

/** A response asking for `calls` in one go, each [id, tool name, JSON arguments]. */
export function toolCallsResponse(
  ...calls: Array<[id: string, name: string, args: string]>
): Partial<ChatResponse> {
  return { toolCalls: calls.map(([id, name, args]) => ({ id, name, arguments: args })) };
}

/** An LLMProvider that answers from a script and records every request. */
export class ScriptedProvider implements LLMProvider {
  readonly model = 'scripted-model';
  readonly requests: ChatRequest[] = [];
  readonly #script: Script[];
  readonly #fallback: Script;

  constructor(script: Script[], fallback: Script = { content: 'fallback' }) {
    this.#script = [...script];
    this.#fallback = fallback;
  }

  async chat(request: ChatRequest): Promise<ChatResponse> {
    this.requests.push({ ...request, messages: [...request.messages] });
    const step = this.#script.shift() ?? this.#fallback;
    if (step instanceof Error) throw step;
    const partial = typeof step === 'function' ? await step(request) : step;
    return {
      content: '',
      toolCalls: [],
      finishReason: 'stop',
      usage: undefined,
      model: this.model,
      ...partial,
    };
  }
}

/** System prompt plus summary, then history and the current messages. */
export const simpleContext: LoopContextBuilder = {
  async buildMessages({ history, session, current }) {
    const system = `system for ${session.sessionKey}${session.summary ? `\nsummary: ${session.summary}` : ''}`;
    return [{ role: 'system', content: system }, ...history, ...current];
  },
};

export class RecordingSink implements OutboundSink {
  readonly sent: OutboundMessageInput[] = [];
  async publish(message: OutboundMessageInput): Promise<void> {
    this.sent.push(message);
  }
}

export class MemoryState implements StateStore {
  last: { channel: string; chatId: string; threadId?: string } | undefined;
  async setLastChannel(channel: string, chatId: string, threadId?: string): Promise<void> {
    this.last = { channel, chatId, ...(threadId ? { threadId } : {}) };
  }
  async getLastChannel() {
    return this.last;
  }
}

/** A logger whose JSON lines are kept in `lines`. */
export function captureLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line.trim()) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

export interface Harness {
  dir: string;
  sessions: JsonlSessionStore;
  sink: RecordingSink;
  agent: AgentLoop;
  cleanup(): Promise<void>;
}

/** Builds an AgentLoop over a temp workspace with the given provider and tools. */
export async function harness(
  provider: LLMProvider,
  tools: Tool[] = [],
  overrides: Partial<AgentLoopOptions> = {},
): Promise<Harness> {
  const dir = await mkdtemp(path.join(tmpdir(), 'magpie-loop-'));
  const sessions = new JsonlSessionStore({ dir: path.join(dir, 'sessions') });
  const sink = new RecordingSink();
  const agent = new AgentLoop({
    provider,
    tools: new ToolRegistry(tools),
    sessions,
    context: simpleContext,
    logger: pino({ level: 'silent' }),
    outbound: sink,
    workspace: dir,
    ...overrides,
  });
  return { dir, sessions, sink, agent, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Lets the harness's agent finish what it runs and removes its workspace;
 * resolves to undefined, for `h = await closeHarness(h)` in an afterEach.
 */
export async function closeHarness(h: Harness | undefined): Promise<undefined> {
  await h?.agent.idle();
  await h?.cleanup();
  return undefined;
}

/** A tool without parameters whose every call gives `result`. */
export function constantTool(name: string, description: string, result: ToolResult): Tool {
  return { name, description, parameters: z.object({}), execute: async () => result };
}

/** An inbound message with the schema's defaults filled in. */
export function inbound(fields: Partial<InboundMessage> & { content: string }): InboundMessage {
  return {
    id: `in-${Math.random().toString(36).slice(2)}`,
    channel: 'telegram',
    chatId: '42',
    senderId: 'u1',
    media: [],
    isGroup: false,
    receivedAt: new Date().toISOString(),
    metadata: {},
    ...fields,
  };
}

/** Tool messages answer every assistant tool call, in order, right after it. */
export function assertPairsWhole(history: ChatMessage[]): boolean {
  for (let i = 0; i < history.length; i += 1) {
    const m = history[i]!;
    if (m.role !== 'assistant' || !m.toolCalls?.length) continue;
    const ids = m.toolCalls.map((c) => c.id);
    const next = history.slice(i + 1, i + 1 + ids.length);
    if (next.some((r, k) => r.role !== 'tool' || r.toolCallId !== ids[k])) return false;
  }
  return true;
}
