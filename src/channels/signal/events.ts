/**
 * signal-cli's Server-Sent Events stream (`GET <SIGNAL_RPC_URL>/api/v1/events`),
 * read with the `eventsource` package. Each `receive` event's data is handed
 * on as text; the adapter parses it. When the stream ends or fails (signal-cli
 * restarted, the network dropped, an error status) it is opened again with a
 * growing delay (`initialDelayMs` doubling up to `maxDelayMs`, back to the
 * start once a stream opens), sending the last event id it saw as
 * `Last-Event-ID`, so a daemon that keeps its recent events sends those missed
 * (one that does not, or was restarted, may send some again: the adapter takes
 * a message once by its id).
 */
import { EventSource } from 'eventsource';
import type { Logger } from '../../log/index.js';
import { withSlash } from './rpc.js';

export interface SignalEventsOptions {
  /** SIGNAL_RPC_URL. */
  url: string;
  /** SIGNAL_ACCOUNT: a multi-account daemon sends only this account's events. */
  account: string;
  /** Called with each `receive` event's data, in arrival order. */
  onEvent: (data: string) => void;
  logger: Logger;
  /** First delay before reopening. @defaultValue 500 */
  initialDelayMs?: number;
  /** Longest delay before reopening. @defaultValue 30000 */
  maxDelayMs?: number;
}

/** One event stream, reopened until `close()`. */
export class SignalEvents {
  readonly url: string;
  private readonly onEvent: (data: string) => void;
  private readonly logger: Logger;
  private readonly initialDelayMs: number;
  private readonly maxDelayMs: number;
  private source: EventSource | undefined;
  private timer: NodeJS.Timeout | undefined;
  private delay: number;
  private lastEventId: string | undefined;
  private closed = false;
  private down = false;
  private opened: (() => void) | undefined;
  /** Streams opened so far (the first one and every reconnection). */
  opens = 0;

  constructor(options: SignalEventsOptions) {
    const url = new URL('api/v1/events', withSlash(options.url));
    url.searchParams.set('account', options.account);
    this.url = url.toString();
    this.onEvent = options.onEvent;
    this.logger = options.logger;
    this.initialDelayMs = options.initialDelayMs ?? 500;
    this.maxDelayMs = options.maxDelayMs ?? 30_000;
    if (!(this.initialDelayMs >= 1) || this.maxDelayMs < this.initialDelayMs)
      throw new RangeError('reconnect delays must be positive and maxDelayMs ≥ initialDelayMs');
    this.delay = this.initialDelayMs;
  }

  /** Opens the stream; resolves once it is open (later failures reconnect by themselves). */
  open(): Promise<void> {
    const opened = new Promise<void>((resolve) => {
      this.opened = resolve;
    });
    this.connect();
    return opened;
  }

  /** Stops reading and reconnecting. Idempotent. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.source?.close();
    this.source = undefined;
    this.opened?.();
  }

  private connect(): void {
    if (this.closed) return;
    const lastEventId = this.lastEventId;
    const source = new EventSource(this.url, {
      fetch: (input, init) =>
        fetch(input, {
          ...init,
          headers: { ...init.headers, ...(lastEventId ? { 'Last-Event-ID': lastEventId } : {}) },
        }),
    });
    this.source = source;
    source.addEventListener('open', () => {
      this.opens++;
      if (this.down) this.logger.info('signal event stream open again');
      this.down = false;
      this.delay = this.initialDelayMs;
      this.opened?.();
      this.opened = undefined;
    });
    const take = (event: MessageEvent) => {
      if (event.lastEventId) this.lastEventId = event.lastEventId;
      this.onEvent(String(event.data));
    };
    source.addEventListener('receive', take);
    source.addEventListener('message', take);
    source.addEventListener('error', (event) => {
      if (this.closed || this.source !== source) return;
      source.close();
      if (!this.down) {
        this.logger.warn(
          { error: (event as { message?: string }).message, retryInMs: this.delay },
          'signal event stream lost (signal-cli restarted or unreachable?): reconnecting',
        );
      }
      this.down = true;
      this.timer = setTimeout(() => this.connect(), this.delay);
      this.timer.unref();
      this.delay = Math.min(this.delay * 2, this.maxDelayMs);
    });
  }
}
