/**
 * Loop detection: the same tool called with the same arguments three times
 * in a row gets, instead of a fourth identical result, a note telling the
 * model to change course. If it repeats itself again after that note, the
 * turn stops with a clear message to the user.
 */
import type { IterationHook } from './types.js';

export interface LoopDetectorOptions {
  /** Identical consecutive calls that count as a loop. @defaultValue 3 */
  repeats?: number;
}

/** What the model reads instead of the repeated call's result. */
export function loopNote(tool: string, repeats: number): string {
  return (
    `You have called ${tool} with the same arguments ${repeats} times in a row; its result will not change. ` +
    'Change course: try a different approach or different arguments, or answer the user with what you have.'
  );
}

/** The final reply when the model keeps repeating itself after the note. */
export function loopStopReply(tool: string): string {
  return (
    `I stopped because I kept repeating the same step (${tool} with the same arguments) without getting anywhere. ` +
    'Tell me how you would like me to proceed.'
  );
}

/** Canonical form of arguments, so `{"a":1,"b":2}` and `{ "b": 2, "a": 1 }` compare equal. */
function canonical(raw: string): string {
  try {
    return JSON.stringify(sortKeys(JSON.parse(raw)));
  } catch {
    return raw.trim();
  }
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/** The hook (state lives for one turn). */
export function loopDetector(options: LoopDetectorOptions = {}): IterationHook {
  const repeats = options.repeats ?? 3;
  if (!Number.isInteger(repeats) || repeats < 2) {
    throw new RangeError(`loopDetector: repeats must be a whole number ≥ 2, not ${repeats}`);
  }
  let last = '';
  let streak = 0;
  let warned = false;
  return {
    name: 'loop-detector',
    afterCall({ response, log }) {
      const notes = new Map<string, string>();
      for (const call of response.toolCalls) {
        const signature = `${call.name}\n${canonical(call.arguments)}`;
        streak = signature === last ? streak + 1 : 1;
        last = signature;
        if (streak < repeats) continue;
        if (warned) {
          log.warn({ tool: call.name, streak }, 'loop detected again after a note; stopping the turn');
          return { action: 'stop', reply: loopStopReply(call.name) };
        }
        warned = true;
        log.warn({ tool: call.name, streak }, 'loop detected; telling the model to change course');
        notes.set(call.id, loopNote(call.name, streak));
      }
      return notes.size > 0 ? { action: 'answer', results: notes } : { action: 'continue' };
    },
  };
}
