/**
 * How far a reply's delivery got: the parts already sent per outbound message
 * id, so a retried job resumes after them instead of repeating them. Kept for
 * the most recent messages only (an LRU map), since a message that fails for
 * good is never finished.
 */
import { LruMap } from './lru-map.js';

/** Parts delivered per outbound message id, for the latest `limit` messages. */
export class SendProgress {
  readonly #parts: LruMap<string, number>;

  /** @param limit messages remembered. @defaultValue 1000 */
  constructor(limit = 1000) {
    this.#parts = new LruMap(limit);
  }

  /** How many parts of `id` were delivered before (0 for a new message). */
  sent(id: string): number {
    return this.#parts.get(id) ?? 0;
  }

  /** Records that the first `count` parts of `id` are delivered. */
  record(id: string, count: number): void {
    this.#parts.set(id, count);
  }

  /** The message is delivered in full: nothing to resume. */
  finish(id: string): void {
    this.#parts.delete(id);
  }
}
