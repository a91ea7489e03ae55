/**
 * Builds one ChatResponse from streamed chat-completion chunks: text deltas,
 * tool calls merged by `index`, finish reason and usage. Tolerant of the
 * compatible servers that omit `type`, `role`, `finish_reason`, the tool-call
 * `id` or even the `index`. Reasoning fields are ignored on purpose.
 */
import { randomUUID } from 'node:crypto';
import type { OpenAI } from 'openai';
import type { ChatResponse, ToolCall, Usage } from '../types.js';
import { toUsage } from './usage.js';

type Chunk = OpenAI.ChatCompletionChunk;
type ToolCallDelta = NonNullable<OpenAI.ChatCompletionChunk.Choice.Delta['tool_calls']>[number];

interface PartialCall {
  id: string | undefined;
  name: string;
  arguments: string;
}

/** Feed it every chunk with `add`, then read `result()`. */
export class StreamAccumulator {
  private text = '';
  private readonly calls = new Map<number, PartialCall>();
  private lastIndex = -1;
  private finishReason: string | null = null;
  private usage: Usage | undefined;
  private model: string | undefined;
  private chunks = 0;
  /** Choices (index 0) seen across the chunks; none at all is a malformed completion. */
  private choices = 0;

  /** Adds one chunk; returns the new text it carried ('' if none) so the caller can stream it on. */
  add(chunk: Chunk): string {
    this.chunks++;
    if (typeof chunk.model === 'string' && chunk.model) this.model = chunk.model;
    if (chunk.usage) this.usage = toUsage(chunk.usage) ?? this.usage;
    let text = '';
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue;
      this.choices++;
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
      const delta = choice.delta;
      if (!delta) continue;
      if (typeof delta.content === 'string' && delta.content) text += delta.content;
      for (const callDelta of delta.tool_calls ?? []) this.addToolCall(callDelta);
    }
    this.text += text;
    return text;
  }

  /** True until the first chunk arrives. */
  get empty(): boolean {
    return this.chunks === 0;
  }

  /** True when chunks arrived but none carried a choice (only usage, or nothing usable). */
  get choiceless(): boolean {
    return this.chunks > 0 && this.choices === 0;
  }

  result(): ChatResponse {
    const toolCalls: ToolCall[] = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => ({
        id: call.id ?? `call_${randomUUID()}`,
        name: call.name,
        arguments: call.arguments,
      }));
    return {
      content: this.text,
      toolCalls,
      finishReason: this.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : null),
      usage: this.usage,
      model: this.model,
    };
  }

  private addToolCall(delta: ToolCallDelta): void {
    const index = this.indexOf(delta);
    this.lastIndex = index;
    const call = this.calls.get(index) ?? { id: undefined, name: '', arguments: '' };
    if (typeof delta.id === 'string' && delta.id) call.id = delta.id;
    const fn = delta.function;
    // Names come whole in one delta; some servers repeat them in every delta, so only a new piece is appended.
    if (fn && typeof fn.name === 'string' && fn.name !== call.name) call.name += fn.name;
    if (fn && typeof fn.arguments === 'string') call.arguments += fn.arguments;
    this.calls.set(index, call);
  }

  /** The index a delta belongs to; without one, a new id starts a call and anything else continues the last. */
  private indexOf(delta: ToolCallDelta): number {
    if (typeof delta.index === 'number') return delta.index;
    if (typeof delta.id === 'string' && delta.id) {
      for (const [index, call] of this.calls) if (call.id === delta.id) return index;
      return this.calls.size === 0 ? 0 : Math.max(...this.calls.keys()) + 1;
    }
    return Math.max(this.lastIndex, 0);
  }
}
