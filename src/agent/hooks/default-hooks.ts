/** The iteration hooks every turn gets unless the loop is given others. */
import { loopDetector } from './loop-detector.js';
import { trimToolResults } from './trim-tool-results.js';
import type { IterationHook } from './types.js';

/** Trim tool results over 8,000 characters in requests; stop repeated identical tool calls. */
export function defaultHooks(): IterationHook[] {
  return [trimToolResults(), loopDetector()];
}
