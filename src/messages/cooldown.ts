/**
 * Cool-down records of failing model endpoints, as a cool-down store keeps and
 * reports them (the policy and port: src/providers/cooldown.ts; the Redis
 * store: src/bus/cooldown-store.ts; read by the status views).
 */

/** A running cool-down, as a store reports it. */
export interface CooldownEntry {
  /** The store key (providers/cooldown.ts `cooldownKeys`). */
  key: string;
  /** What is cooling down, for people: `llama3.1 at http://…` or `http://… (every model)`. */
  label: string;
  /** Failures in a row. */
  failures: number;
  /** One line saying why (no credentials). */
  reason: string;
  /** A few words saying why, for chats (`server error 503`); '' when not recorded. */
  short: string;
  /** Milliseconds until it may be tried again (0 when over but a probe is under way). */
  leftMs: number;
}

/** The answer to "may I call this endpoint now?". */
export type CooldownCheck =
  /** No failure on record: call it. */
  | { state: 'free' }
  /** Its cool-down ran out and this caller is the one to try it; report the outcome. */
  | { state: 'probe' }
  /** Leave it alone (cooling down, or another caller is trying it right now). */
  | { state: 'cooling'; entry: CooldownEntry };

/** How long cool-downs last. */
export interface CooldownPolicy {
  /** The first cool-down; each further failure in a row doubles it. @defaultValue 30_000 */
  baseMs: number;
  /** The longest cool-down (a Retry-After too is capped here). @defaultValue 600_000 */
  maxMs: number;
}

/** What a failure records. */
export interface CooldownFailure {
  label: string;
  reason: string;
  /** A few words for chats (`server error 503`, `out of quota`). @defaultValue '' */
  short?: string;
  /** The server's Retry-After: the cool-down lasts at least this long (within `maxMs`). */
  retryAfterMs?: number;
}
