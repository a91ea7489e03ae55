/**
 * The live renderer: shows a turn's answer in place on an edit-capable
 * channel while it is written, then turns it into the final reply.
 *
 * - Snapshots (messages/live-update.ts) are shown as plain text — a half-written
 *   Markdown construct is never sent to a parser — split at the surface's
 *   limit, at most one edit round per `editIntervalMs` per turn; a 429 pushes
 *   the next round back by its retry time. The newest snapshot wins.
 * - The final reply (`finish`) edits the preview's messages into the
 *   channel's formatted parts, posts parts beyond them and deletes preview
 *   parts it no longer needs; its actions (buttons) go under the last part. An edit refused for good (message deleted, too
 *   old) falls back to posting that part, once; the stale preview part is
 *   then deleted.
 * - What was shown is recorded under the turn's id (LiveRecords, in Redis):
 *   a turn redone after a crash continues the preview it started, a final
 *   reply retried after it was shown does nothing, and a snapshot arriving
 *   after the final reply is ignored.
 */
import { createHash } from 'node:crypto';
import { AppError, describeError, hasCode } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { LiveRecord, LiveUpdate } from '../../messages/live-update.js';
import type { OutboundAction, OutboundMessage } from '../../messages/messages.js';
import { splitReply } from '../chunk.js';
import { LruMap } from '../lru-map.js';
import type { LiveRecords, LiveSurface, LiveTarget } from './surface.js';

/** Attempts of one final edit that the platform rate-limits or fails transiently. */
const FINAL_EDIT_ATTEMPTS = 4;
/** Longest wait before one final edit attempt (ms). */
const MAX_FINAL_WAIT_MS = 30_000;

/** The mark in front of a progress line ("⏳ reading notes/plan.md"). */
export const PROGRESS_MARK = '⏳';

export interface LiveRendererOptions<P> {
  /** The channel's name (records are kept per channel and turn). */
  channel: string;
  surface: LiveSurface<P>;
  records: LiveRecords;
  logger: Logger;
  /** Turns whose state is kept in memory (older ones are read back from the records). @defaultValue 500 */
  maxTurns?: number;
}

/** One turn's preview as this process knows it. */
interface TurnState {
  target: LiveTarget;
  record: LiveRecord | undefined;
  /** Plain text each preview part shows now. */
  shown: string[];
  pending: LiveUpdate | undefined;
  timer: NodeJS.Timeout | undefined;
  /** Operations on the turn's messages run one at a time, in order. */
  chain: Promise<unknown>;
  /** No edit round before this time (ms since the epoch). */
  notBefore: number;
  /** A preview part could not be shown for good: the final reply is then posted, not edited in. */
  broken: boolean;
}

/** Shows live replies through one channel's surface. */
export class LiveRenderer<P> {
  readonly #o: LiveRendererOptions<P>;
  readonly #turns: LruMap<string, TurnState>;

  constructor(options: LiveRendererOptions<P>) {
    this.#o = options;
    this.#turns = new LruMap(options.maxTurns ?? 500);
  }

  /** Takes a snapshot; it is shown at the surface's pace. Never throws. */
  update(update: LiveUpdate): void {
    const state = this.#state(update.turn, targetOf(update));
    if (state.record?.done) return;
    state.pending = update;
    this.#schedule(update.turn, state);
  }

  /**
   * Completes the preview of `message.live` with the final reply. Resolves
   * true when the reply is shown (edited in, or already shown by an earlier
   * attempt), false when there was no preview: the caller then sends it as usual.
   */
  async finish(message: OutboundMessage): Promise<boolean> {
    const turn = message.live;
    if (!turn) return false;
    const state = this.#state(turn, targetOf(message));
    clearTimeout(state.timer);
    state.timer = undefined;
    state.pending = undefined;
    return this.#enqueue(state, () => this.#finish(turn, state, message));
  }

  /** Resolves when every queued operation has run (tests, shutdown). */
  async idle(turn: string): Promise<void> {
    await this.#turns.get(turn)?.chain;
  }

  #state(turn: string, target: LiveTarget): TurnState {
    let state = this.#turns.get(turn);
    if (!state) {
      state = {
        target,
        record: undefined,
        shown: [],
        pending: undefined,
        timer: undefined,
        chain: this.#loadRecord(turn).then((record) => {
          if (state) state.record = record;
        }),
        notBefore: 0,
        broken: false,
      };
      this.#turns.set(turn, state);
    }
    return state;
  }

  async #loadRecord(turn: string): Promise<LiveRecord | undefined> {
    try {
      return await this.#o.records.get(this.#o.channel, turn);
    } catch (err) {
      this.#o.logger.warn({ turn, err: describeError(err) }, 'live record not readable; starting afresh');
      return undefined;
    }
  }

  #schedule(turn: string, state: TurnState): void {
    if (state.timer) return;
    const wait = Math.max(0, state.notBefore - Date.now());
    state.timer = setTimeout(() => {
      state.timer = undefined;
      void this.#enqueue(state, () => this.#showPending(turn, state));
    }, wait);
  }

  #enqueue<T>(state: TurnState, step: () => Promise<T>): Promise<T> {
    const next = state.chain.then(step);
    state.chain = next.catch(() => undefined);
    return next;
  }

  /** One edit round: the newest snapshot, as plain parts. */
  async #showPending(turn: string, state: TurnState): Promise<void> {
    const update = state.pending;
    if (!update || state.broken || state.record?.done) return;
    // An edit in flight when this round was scheduled may have moved the pace on: wait for it.
    if (Date.now() < state.notBefore) {
      this.#schedule(turn, state);
      return;
    }
    state.pending = undefined;
    const { surface } = this.#o;
    const parts = splitReply(displayText(update), surface.limit);
    const record: LiveRecord = state.record ?? { messageIds: [] };
    state.record = record;
    try {
      for (const [index, part] of parts.entries()) {
        const id = record.messageIds[index];
        if (id === undefined) {
          record.messageIds[index] = await surface.post(
            partTarget(state.target, index),
            part,
            `${turn}:p${index}`,
          );
          await this.#save(turn, record);
        } else if (state.shown[index] !== part) {
          await surface.edit(state.target, id, part);
        }
        state.shown[index] = part;
      }
      state.notBefore = Date.now() + surface.editIntervalMs;
    } catch (err) {
      if (hasCode(err, 'DELIVERY_PERMANENT')) {
        // The preview is gone (deleted by the user, too old): the final reply is posted instead.
        state.broken = true;
        this.#o.logger.info(
          { turn, err: describeError(err) },
          'live preview refused; the reply will be posted',
        );
        return;
      }
      const after = err instanceof AppError && err.retryAfterMs !== undefined ? err.retryAfterMs : 0;
      state.notBefore = Date.now() + Math.max(surface.editIntervalMs, after);
      state.pending ??= update;
      this.#o.logger.debug({ turn, err: describeError(err) }, 'live edit failed; trying again later');
      this.#schedule(turn, state);
    }
  }

  async #finish(turn: string, state: TurnState, message: OutboundMessage): Promise<boolean> {
    const record = state.record ?? { messageIds: [] };
    const hash = contentHash(message.content);
    if (record.finalHash === hash) return true;
    if (record.messageIds.length === 0) {
      // Nothing was shown: the caller sends. A snapshot still on its way reaches this process
      // (the one owning the channel), so marking the turn done here, not in Redis, stops it.
      state.record = { ...record, done: true };
      return false;
    }
    const { surface } = this.#o;
    const log = this.#o.logger;
    const parts = surface.finalParts(message.content);
    const ids = [...record.messageIds];
    const stale: string[] = [];
    for (const [index, part] of parts.entries()) {
      const id = ids[index];
      const key = `${message.id}:f${index}`;
      const actions = index === parts.length - 1 ? message.actions : undefined;
      if (id !== undefined && !state.broken) {
        try {
          await this.#editFinal(state, id, part, actions);
          continue;
        } catch (err) {
          log.info({ turn, err: describeError(err) }, 'final edit refused; posting the part instead');
          stale.push(id);
        }
      } else if (id !== undefined) {
        stale.push(id);
      }
      ids[index] = await surface.postFinal(partTarget(state.target, index), part, key, actions);
      // Saved part by part: a retried final edits what this attempt posted instead of posting again.
      state.record = { messageIds: ids.slice(0, Math.max(index + 1, record.messageIds.length)) };
      await this.#save(turn, state.record);
    }
    stale.push(...ids.slice(parts.length));
    state.record = { messageIds: ids.slice(0, parts.length), done: true, finalHash: hash };
    await this.#save(turn, state.record);
    for (const id of stale) {
      await surface.remove(state.target, id).catch((err: unknown) => {
        log.warn({ turn, err: describeError(err) }, 'stale preview part not deleted');
      });
    }
    return true;
  }

  /**
   * One final edit at the surface's pace: a rate limit is waited out (a few times, each at most
   * MAX_FINAL_WAIT_MS) before the caller falls back to posting.
   */
  async #editFinal(
    state: TurnState,
    id: string,
    part: P,
    actions: readonly OutboundAction[] | undefined,
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const wait = state.notBefore - Date.now();
      if (wait > 0) await sleep(Math.min(wait, MAX_FINAL_WAIT_MS));
      try {
        await this.#o.surface.editFinal(state.target, id, part, actions);
        state.notBefore = Date.now() + this.#o.surface.editIntervalMs;
        return;
      } catch (err) {
        if (!hasCode(err, 'DELIVERY_TRANSIENT') || attempt >= FINAL_EDIT_ATTEMPTS) throw err;
        const after = err instanceof AppError ? (err.retryAfterMs ?? 0) : 0;
        state.notBefore = Date.now() + Math.max(this.#o.surface.editIntervalMs, after);
      }
    }
  }

  async #save(turn: string, record: LiveRecord): Promise<void> {
    try {
      await this.#o.records.put(this.#o.channel, turn, record);
    } catch (err) {
      // Kept in memory still; only a redone turn on another gateway would miss it.
      this.#o.logger.warn({ turn, err: describeError(err) }, 'live record not saved');
    }
  }
}

/** What a snapshot shows: the text so far, and the progress line while tools run. */
export function displayText(update: Pick<LiveUpdate, 'text' | 'progress'>): string {
  const text = update.text.trimEnd();
  if (update.progress === undefined) return text;
  const line = `${PROGRESS_MARK} ${update.progress}`;
  return text === '' ? line : `${text}\n\n${line}`;
}

function targetOf(source: Pick<LiveUpdate, 'chatId' | 'threadId' | 'replyTo'>): LiveTarget {
  return {
    chatId: source.chatId,
    ...(source.threadId ? { threadId: source.threadId } : {}),
    ...(source.replyTo ? { replyTo: source.replyTo } : {}),
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Only the first part replies to the user's message. */
function partTarget(target: LiveTarget, index: number): LiveTarget {
  if (index === 0 || target.replyTo === undefined) return target;
  const { replyTo: _replyTo, ...rest } = target;
  return rest;
}

function contentHash(content: string): string {
  return createHash('sha256').update(content).digest('base64url').slice(0, 22);
}
