/**
 * Runs the tool calls of one model response concurrently and returns their
 * results in call order. Every call gets a result: a tool's failure is text
 * the model reads, a call answered beforehand (refused, or settled by a hook)
 * gets that answer without running, and on cancellation every outstanding call
 * is answered with "operation cancelled by user" so the stored history stays valid.
 */
import { describeError } from '../errors/index.js';
import type { ChatMessage, ToolCall, ToolDefinition } from '../providers/types.js';
import type { ToolContext, ToolImage, ToolResult } from '../tools/types.js';
import type { TurnMeter } from './turn-metrics.js';

/** What the loop needs from the tool registry (ToolRegistry satisfies it). */
export interface LoopTools {
  definitions(): ToolDefinition[];
  /** Never throws by contract; a throw is still turned into an error result here. */
  execute(name: string, rawArguments: string, ctx: ToolContext): Promise<ToolResult>;
  /** What approvals and the turn's taint need to know of a tool (ToolRegistry.facts). */
  facts?(name: string): { readOnly: boolean; mcp: boolean; untrustedOutput?: string } | undefined;
}

/** The result every outstanding call gets when the turn is cancelled. */
export const CANCELLED_TOOL_TEXT = 'operation cancelled by user';

const CANCELLED_RESULT: ToolResult = { forLLM: CANCELLED_TOOL_TEXT, isError: true };

export interface ToolBatchOptions {
  tools: LoopTools;
  ctx: ToolContext;
  meter: TurnMeter;
  /** Resolves when the turn is cancelled. */
  cancelled: Promise<void>;
  /** Called with a result's `forUser` text, if any. */
  onUserText?: (text: string) => Promise<void>;
  /** Called as each call starts running (not for calls answered beforehand). */
  onStart?: (call: ToolCall) => void;
  /** Results (by call id) of calls that must not run. @defaultValue none */
  answered?: ReadonlyMap<string, string>;
  /** Called once after the batch with the images the results carry, in call order (none: not called). */
  onImages?: (images: ToolImage[]) => void;
}

/**
 * The user message that shows tool results' images to a vision model (chat
 * APIs take images in user messages only); it follows the tool results in the
 * request and is not stored in the session.
 */
export function toolImagesMessage(images: readonly ToolImage[]): ChatMessage {
  const noun = images.length === 1 ? 'the image' : `the ${images.length} images`;
  return {
    role: 'user',
    content: [{ type: 'text', text: `[${noun} returned by the tool calls above]` }, ...images],
  };
}

/** Executes `calls` concurrently; the tool messages come back in call order. */
export async function runToolBatch(
  calls: readonly ToolCall[],
  options: ToolBatchOptions,
): Promise<Extract<ChatMessage, { role: 'tool' }>[]> {
  const { tools, ctx, meter, cancelled } = options;
  const cancelledResult = cancelled.then(() => CANCELLED_RESULT);
  const images: ToolImage[][] = [];
  const messages = await Promise.all(
    calls.map(async (call, index) => {
      const answer = options.answered?.get(call.id);
      if (answer !== undefined) return toolMessage(call, { forLLM: answer, isError: true });
      if (ctx.signal.aborted) return toolMessage(call, CANCELLED_RESULT);
      const started = meter.now();
      options.onStart?.(call);
      const execution = tools
        .execute(call.name, call.arguments, ctx)
        .catch((err: unknown): ToolResult => ({ forLLM: `Error: ${describeError(err)}`, isError: true }));
      const result = await Promise.race([execution, cancelledResult]);
      meter.toolCall(call.name, meter.now() - started, !result.isError, started);
      if (result.forUser && result !== CANCELLED_RESULT && options.onUserText) {
        await options.onUserText(result.forUser);
      }
      if (result.images && result.images.length > 0 && result !== CANCELLED_RESULT)
        images[index] = result.images;
      return toolMessage(call, result);
    }),
  );
  const shown = images.flat();
  if (shown.length > 0) options.onImages?.(shown);
  return messages;
}

function toolMessage(call: ToolCall, result: ToolResult): Extract<ChatMessage, { role: 'tool' }> {
  return { role: 'tool', toolCallId: call.id, name: call.name, content: result.forLLM };
}
