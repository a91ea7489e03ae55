/**
 * A Map with a size cap: reading or writing a key makes it the newest; past
 * the cap the least recently used key is dropped. For what a long-running
 * process must not keep for every chat or message it has ever seen (the
 * channels' delivery progress).
 */

/** A least-recently-used map of at most `max` entries. */
export class LruMap<K, V> {
  readonly #entries = new Map<K, V>();
  readonly #max: number;

  /** @param max the most entries kept (a positive whole number). */
  constructor(max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`LruMap max must be ≥ 1, not ${max}`);
    this.#max = max;
  }

  /** How many entries are kept. */
  get size(): number {
    return this.#entries.size;
  }

  /** The value, marked as the most recently used. */
  get(key: K): V | undefined {
    const value = this.#entries.get(key);
    if (value === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  /** Sets the value as the most recently used, dropping the oldest entry when over the cap. */
  set(key: K, value: V): this {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.#max) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    return this;
  }

  /** Removes the key; true when it was there. */
  delete(key: K): boolean {
    return this.#entries.delete(key);
  }
}
