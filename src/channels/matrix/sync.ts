/**
 * The sync loop, over the SDK's authenticated HTTP (`GET /sync` with `since`
 * and a long-poll `timeout`): the SDK's own `startClient` keeps its position
 * in memory and hands events on before anyone could store them, so magpie
 * drives `/sync` itself and keeps the position in Redis (MatrixStore).
 *
 * - First start (no position kept): one sync without `since`; its invitations
 *   are handled, its timeline (history) is not answered, and its `next_batch`
 *   is kept.
 * - Then each sync's events are handed to `onSync` in order, and the position
 *   advances only once `onSync` resolved: if Redis is away (a publish
 *   rejects) the same sync is asked for again after a pause, and the bus
 *   takes each event once by its id. A restart continues from the kept
 *   position: exactly what was missed.
 */
import { type MatrixClient, Method } from 'matrix-js-sdk';
import { describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { MatrixStore } from './store.js';

/** The part of a sync response magpie reads (every field unchecked beyond its shape). */
export interface SyncResponse {
  next_batch: string;
  rooms?: {
    join?: Record<string, JoinedRoom>;
    invite?: Record<string, { invite_state?: { events?: unknown[] } }>;
  };
}

export interface JoinedRoom {
  timeline?: { events?: unknown[] };
  state?: { events?: unknown[] };
  summary?: { 'm.joined_member_count'?: number };
}

export interface SyncLoopOptions {
  client: MatrixClient;
  account: string;
  store: MatrixStore;
  logger: Logger;
  /** Handles one sync's events; a rejection keeps the position where it was. */
  onSync(sync: SyncResponse, first: boolean): Promise<void>;
  /** How long the homeserver holds a sync open. @defaultValue 30000 */
  pollTimeoutMs?: number;
  /** The pause after a failed sync or a sync whose events could not all be handled. @defaultValue 2000 */
  retryMs?: number;
}

/** Runs `/sync` until stopped; see the file header. */
export class SyncLoop {
  readonly #o: SyncLoopOptions;
  readonly #abort = new AbortController();
  #running: Promise<void> | undefined;

  constructor(options: SyncLoopOptions) {
    this.#o = options;
  }

  /** Takes the first sync (rejects when it cannot), then keeps syncing in the background. */
  async start(): Promise<void> {
    let since = await this.#o.store.position(this.#o.account);
    if (since === undefined) {
      const first = await this.#sync(undefined, 0);
      await this.#o.onSync(first, true);
      await this.#o.store.savePosition(this.#o.account, first.next_batch);
      since = first.next_batch;
      this.#o.logger.info('matrix first start: history left unanswered');
    }
    this.#running = this.#loop(since);
  }

  /** Stops the long poll and waits for the loop. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#running;
  }

  async #loop(start: string): Promise<void> {
    let since = start;
    const signal = this.#abort.signal;
    while (!signal.aborted) {
      try {
        const sync = await this.#sync(since, this.#o.pollTimeoutMs ?? 30_000);
        if (signal.aborted) return;
        await this.#o.onSync(sync, false);
        await this.#o.store.savePosition(this.#o.account, sync.next_batch);
        since = sync.next_batch;
      } catch (err) {
        if (signal.aborted) return;
        this.#o.logger.warn(
          { err: describeError(err) },
          'matrix sync not taken (homeserver or bus away?): the same position is asked for again',
        );
        await pause(this.#o.retryMs ?? 2000, signal);
      }
    }
  }

  async #sync(since: string | undefined, timeoutMs: number): Promise<SyncResponse> {
    const query: Record<string, string> = { timeout: String(timeoutMs) };
    if (since !== undefined) query['since'] = since;
    else query['filter'] = JSON.stringify({ room: { timeline: { limit: 1 } } });
    const res = await this.#o.client.http.authedRequest<SyncResponse>(Method.Get, '/sync', query, undefined, {
      localTimeoutMs: timeoutMs + 15_000,
      abortSignal: this.#abort.signal,
      priority: 'auto',
    });
    if (typeof res?.next_batch !== 'string')
      throw new TypeError('the homeserver answered a sync without next_batch');
    return res;
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
