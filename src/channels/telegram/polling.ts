/**
 * Long polling that never drops an update: an update's offset is confirmed
 * (the next getUpdates asks for id+1) only after its handler resolved, i.e.
 * its message is on the bus. A failing handler (Redis away) is retried with
 * backoff, in order, until it succeeds or the poller stops. Updates that
 * arrived while the bot was down are fetched on start.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type Telegram, TelegramError } from 'telegraf';
import { describeError, hasCode } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { TgUpdate } from './inbound.js';

type TelegrafSignal = NonNullable<Parameters<Telegram['callApi']>[2]>['signal'];

export interface PollerOptions {
  telegram: Telegram;
  logger: Logger;
  /** Handles one update; rejects when it must be retried. */
  handle: (update: TgUpdate) => Promise<void>;
  /** getUpdates long-poll timeout in seconds. @defaultValue 30 */
  timeoutSeconds?: number;
  /** First retry delay after a failure; doubles up to `maxBackoffMs`. @defaultValue 1000 */
  backoffMs?: number;
  /** @defaultValue 30000 */
  maxBackoffMs?: number;
}

/** Runs the getUpdates loop in the background between `start` and `stop`. */
export class UpdatePoller {
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  /** The next update id to ask for; everything below it is on the bus. */
  private offset = 0;
  /** The offset Telegram was last told about. */
  private confirmed = 0;

  constructor(private readonly options: PollerOptions) {}

  start(): void {
    if (this.loop) return;
    this.loop = this.run();
  }

  /** Aborts the long poll, lets the update in hand finish, confirms the offset. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    this.abort.abort();
    await this.loop;
    if (this.offset > this.confirmed) {
      try {
        await this.options.telegram.callApi('getUpdates', { offset: this.offset, limit: 1, timeout: 0 });
        this.confirmed = this.offset;
      } catch (err) {
        this.options.logger.warn({ err: describeError(err) }, 'could not confirm the last Telegram updates');
      }
    }
  }

  private async run(): Promise<void> {
    const { logger } = this.options;
    const signal = this.abort.signal;
    let failures = 0;
    while (!signal.aborted) {
      let updates: TgUpdate[];
      try {
        updates = (await this.options.telegram.callApi(
          'getUpdates',
          {
            offset: this.offset,
            timeout: this.options.timeoutSeconds ?? 30,
            limit: 100,
            allowed_updates: ['message', 'callback_query'],
          },
          // telegraf types its own AbortSignal shim; node-fetch accepts the native one.
          { signal: signal as unknown as TelegrafSignal },
        )) as TgUpdate[];
        this.confirmed = this.offset;
        failures = 0;
      } catch (err) {
        if (signal.aborted) return;
        failures++;
        const hint =
          err instanceof TelegramError && err.code === 409
            ? 'another process is polling this bot, or a webhook is set'
            : 'retrying';
        logger.warn({ err: describeError(err), failures }, `Telegram getUpdates failed: ${hint}`);
        if (!(await this.pause(failures, err))) return;
        continue;
      }
      for (const update of updates) {
        if (update.update_id < this.offset) continue;
        if (!(await this.handleUntilDone(update))) return;
        this.offset = update.update_id + 1;
      }
    }
  }

  /** Handles one update, retrying until it succeeds; false when stopped first. */
  private async handleUntilDone(update: TgUpdate): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.options.handle(update);
        return true;
      } catch (err) {
        if (hasCode(err, 'INVALID_MESSAGE')) {
          this.options.logger.error(
            { updateId: update.update_id, err: describeError(err) },
            'Telegram update could not be turned into a valid message; skipped',
          );
          return true;
        }
        this.options.logger.warn(
          { updateId: update.update_id, attempt, err: describeError(err) },
          'Telegram update not handed to the bus yet; retrying',
        );
        if (!(await this.pause(attempt, err))) return false;
      }
    }
  }

  /** Waits before a retry (honouring a 429's retry_after); false when stopped meanwhile. */
  private async pause(attempt: number, err: unknown): Promise<boolean> {
    const base = this.options.backoffMs ?? 1000;
    const max = this.options.maxBackoffMs ?? 30_000;
    let ms = Math.min(base * 2 ** (attempt - 1), max);
    if (err instanceof TelegramError && err.code === 429 && err.parameters?.retry_after !== undefined) {
      ms = err.parameters.retry_after * 1000;
    }
    try {
      await sleep(ms, undefined, { signal: this.abort.signal });
      return true;
    } catch (sleepErr) {
      if (this.abort.signal.aborted) return false;
      throw sleepErr;
    }
  }
}
