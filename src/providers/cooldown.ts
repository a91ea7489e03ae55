/**
 * Cool-downs of failing model endpoints, shared by every caller of one store:
 * an endpoint that failed is left alone until its cool-down ends (30 s,
 * doubling while it keeps failing, capped); then exactly one caller "probes"
 * it while the others still treat it as cooling, so a dead endpoint costs one
 * failed call per cool-down, not one per turn. The port is implemented here
 * in memory (`magpie agent`, one process) and in Redis (src/bus/cooldown-store.ts,
 * shared by all workers); one contract test runs against both.
 */

import type { CooldownCheck, CooldownEntry, CooldownFailure, CooldownPolicy } from '../messages/cooldown.js';

export type { CooldownCheck, CooldownEntry, CooldownFailure, CooldownPolicy };

/** The defaults of {@link CooldownPolicy}. */
export const DEFAULT_COOLDOWN: Readonly<CooldownPolicy> = Object.freeze({ baseMs: 30_000, maxMs: 600_000 });

/** The port every cool-down store implements. */
export interface CooldownStore {
  /**
   * May `keys` (an endpoint and its model, checked together) be called now? Any key cooling
   * down, or being probed by another caller, says no. A key whose cool-down ran out is claimed
   * for this caller for `probeMs` (how long its call may take).
   */
  claim(keys: readonly string[], probeMs: number): Promise<CooldownCheck>;
  /** The cool-down that would stop a call to `keys` now, without claiming anything. */
  peek(keys: readonly string[]): Promise<CooldownEntry | undefined>;
  /**
   * Records a failure of `key`: a cool-down of `baseMs · 2^(failures-1)` (at least the
   * Retry-After), at most `maxMs`. A failure while it is already cooling down (a call that
   * started before) changes nothing.
   */
  failed(key: string, failure: CooldownFailure, policy: CooldownPolicy): Promise<CooldownEntry>;
  /** The endpoint answered: its failures are forgotten. */
  succeeded(keys: readonly string[]): Promise<void>;
  /** A probe ended without a verdict (cancelled): another caller may try. */
  release(keys: readonly string[]): Promise<void>;
  /** Every cool-down on record (running, or over and awaiting a probe), longest left first. */
  list(): Promise<CooldownEntry[]>;
}

/**
 * The keys of one model: its endpoint (a refused connection or a time-out
 * benches every model there) and the model on it (a 503, 429 or spent quota
 * benches that model only).
 *
 * @example cooldownKeys('http://127.0.0.1:11434/v1/', 'llama3.1')
 * // { endpoint: 'endpoint http://127.0.0.1:11434/v1', model: 'model http://127.0.0.1:11434/v1 llama3.1' }
 */
export function cooldownKeys(baseURL: string, model: string): { endpoint: string; model: string } {
  const url = baseURL.replace(/\/+$/, '');
  return { endpoint: `endpoint ${url}`, model: `model ${url} ${model}` };
}

/** The cool-down after `failures` failures in a row (with the server's Retry-After, if any). */
export function cooldownMs(failures: number, policy: CooldownPolicy, retryAfterMs = 0): number {
  const doubled = policy.baseMs * 2 ** Math.max(0, Math.min(failures - 1, 30));
  return Math.min(Math.max(doubled, retryAfterMs), policy.maxMs);
}

interface MemoryEntry {
  label: string;
  failures: number;
  reason: string;
  short: string;
  until: number;
  probeUntil: number;
  /** After this the failures are forgotten (a quiet `maxMs` past the cool-down). */
  forgetAt: number;
}

/** Cool-downs of one process (`magpie agent`). */
export class MemoryCooldownStore implements CooldownStore {
  readonly #entries = new Map<string, MemoryEntry>();
  readonly #now: () => number;

  /** @param now the clock. @defaultValue Date.now */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async claim(keys: readonly string[], probeMs: number): Promise<CooldownCheck> {
    const now = this.#now();
    const blocking = this.#blocking(keys, now);
    if (blocking) return { state: 'cooling', entry: blocking };
    const over = keys.flatMap((key) => {
      const entry = this.#live(key, now);
      return entry ? [entry] : [];
    });
    if (over.length === 0) return { state: 'free' };
    for (const entry of over) entry.probeUntil = now + probeMs;
    return { state: 'probe' };
  }

  async peek(keys: readonly string[]): Promise<CooldownEntry | undefined> {
    return this.#blocking(keys, this.#now());
  }

  async failed(key: string, failure: CooldownFailure, policy: CooldownPolicy): Promise<CooldownEntry> {
    const now = this.#now();
    const known = this.#live(key, now);
    if (known && known.until > now) return view(key, known, now);
    const failures = (known?.failures ?? 0) + 1;
    const wait = cooldownMs(failures, policy, failure.retryAfterMs);
    const entry: MemoryEntry = {
      label: failure.label,
      reason: failure.reason,
      short: failure.short ?? '',
      failures,
      until: now + wait,
      probeUntil: 0,
      forgetAt: now + wait + policy.maxMs,
    };
    this.#entries.set(key, entry);
    return view(key, entry, now);
  }

  async succeeded(keys: readonly string[]): Promise<void> {
    for (const key of keys) this.#entries.delete(key);
  }

  async release(keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      const entry = this.#entries.get(key);
      if (entry) entry.probeUntil = 0;
    }
  }

  async list(): Promise<CooldownEntry[]> {
    const now = this.#now();
    return [...this.#entries.keys()]
      .flatMap((key) => {
        const entry = this.#live(key, now);
        return entry ? [view(key, entry, now)] : [];
      })
      .sort((a, b) => b.leftMs - a.leftMs);
  }

  /** The first of `keys` that is cooling down or being probed at `now`. */
  #blocking(keys: readonly string[], now: number): CooldownEntry | undefined {
    for (const key of keys) {
      const entry = this.#live(key, now);
      if (entry && (entry.until > now || entry.probeUntil > now)) return view(key, entry, now);
    }
    return undefined;
  }

  /** The entry of `key`, unless it has been quiet long enough to be forgotten. */
  #live(key: string, now: number): MemoryEntry | undefined {
    const entry = this.#entries.get(key);
    if (entry && entry.forgetAt <= now) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry;
  }
}

function view(key: string, entry: MemoryEntry, now: number): CooldownEntry {
  return {
    key,
    label: entry.label,
    failures: entry.failures,
    reason: entry.reason,
    short: entry.short,
    leftMs: Math.max(0, entry.until - now),
  };
}
