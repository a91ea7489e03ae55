/**
 * Bounds on what one model response may ask the tools to do. Arguments over
 * the size cap are refused before anything runs and stored cut down (a short
 * valid-JSON placeholder), so one runaway call cannot make the chat unusable;
 * calls past the per-response count are answered "too many tool calls at
 * once" instead of running. Every call still gets a result, so the stored
 * history stays valid for the next request.
 */
import { randomUUID } from 'node:crypto';
import { AppError } from '../errors/index.js';
import type { ToolCall } from '../providers/types.js';

/** Limits on the tool calls of one model response. */
export interface ToolCallLimits {
  /**
   * Largest arguments (UTF-8 bytes) of a call that runs; larger ones are refused and stored cut down.
   * @defaultValue 262_144 (256 KiB)
   */
  maxArgumentBytes: number;
  /**
   * Calls run per response; the rest are answered {@link tooManyCallsText} without running.
   * @defaultValue 16
   */
  maxCallsPerResponse: number;
}

/** The defaults of {@link ToolCallLimits}. */
export const DEFAULT_TOOL_CALL_LIMITS: Readonly<ToolCallLimits> = Object.freeze({
  maxArgumentBytes: 256 * 1024,
  maxCallsPerResponse: 16,
});

/** Calls that do not run keep arguments up to this size in the history; larger ones are cut down. */
const UNRUN_ARGUMENT_BYTES = 1024;
/** Longest tool name or call id kept as sent. */
const MAX_NAME_CHARS = 128;

/** The result of each call past the per-response count. */
export function tooManyCallsText(max: number): string {
  return `too many tool calls at once; call at most ${max} per response`;
}

/** The calls as they are stored, shown to hooks and run, and the results of those that must not run. */
export interface BoundedCalls {
  /** Every call, in order; oversized arguments replaced by a placeholder, duplicate or overlong ids renewed. */
  calls: ToolCall[];
  /** Results (by call id) for the calls that do not run. */
  refused: Map<string, string>;
  /** True when some arguments were replaced (the stored response is smaller than the one received). */
  cutDown: boolean;
}

/**
 * Merges `overrides` into the defaults, rejecting values that are not whole numbers ≥ 1.
 *
 * @example toolCallLimits({ maxCallsPerResponse: 4 }) // { maxArgumentBytes: 262144, maxCallsPerResponse: 4 }
 */
export function toolCallLimits(overrides: Partial<ToolCallLimits> = {}): ToolCallLimits {
  const limits = { ...DEFAULT_TOOL_CALL_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isInteger(value) || value < 1) {
      throw new AppError('CONFIG_INVALID', `${name} must be a whole number of at least 1, not ${value}`);
    }
  }
  return limits;
}

/**
 * Applies `limits` to one response's tool calls.
 *
 * @example
 * const { calls, refused } = boundToolCalls(response.toolCalls, limits);
 * // store `calls`; answer the ids in `refused` with their text; run the others
 */
export function boundToolCalls(
  calls: readonly ToolCall[],
  limits: ToolCallLimits = DEFAULT_TOOL_CALL_LIMITS,
): BoundedCalls {
  const refused = new Map<string, string>();
  const ids = new Set<string>();
  let cutDown = false;
  const bounded = calls.map((call, index): ToolCall => {
    const id = ids.has(call.id) || call.id === '' || call.id.length > MAX_NAME_CHARS ? newId() : call.id;
    ids.add(id);
    const bytes = Buffer.byteLength(call.arguments, 'utf8');
    const runs = index < limits.maxCallsPerResponse;
    const nameTooLong = call.name.length > MAX_NAME_CHARS;
    const name = nameTooLong ? call.name.slice(0, MAX_NAME_CHARS) : call.name;
    if (!runs) {
      refused.set(id, tooManyCallsText(limits.maxCallsPerResponse));
      if (bytes <= UNRUN_ARGUMENT_BYTES) return { id, name, arguments: call.arguments };
      cutDown = true;
      return { id, name, arguments: placeholder(bytes, 'not run') };
    }
    if (bytes > limits.maxArgumentBytes) {
      refused.set(id, oversizeText(bytes, limits.maxArgumentBytes));
      cutDown = true;
      return { id, name, arguments: placeholder(bytes, `over the ${limits.maxArgumentBytes}-byte limit`) };
    }
    if (nameTooLong) refused.set(id, `Error: no tool has a name of ${call.name.length} characters`);
    return { id, name, arguments: call.arguments };
  });
  return { calls: bounded, refused, cutDown };
}

function newId(): string {
  return `call_${randomUUID().replaceAll('-', '')}`;
}

/** A short, valid JSON object standing in for arguments that were not kept. */
function placeholder(bytes: number, why: string): string {
  return JSON.stringify({ omitted: `${bytes} bytes of arguments, ${why}; not stored` });
}

function oversizeText(bytes: number, max: number): string {
  return (
    `Error: the arguments of this call are ${bytes} bytes, over the limit of ${max} bytes; it was not run. ` +
    'Send smaller arguments: write a large file in parts (write_file, then append_file).'
  );
}
