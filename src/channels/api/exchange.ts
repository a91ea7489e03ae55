/**
 * One API request as a turn on the bus, the way `magpie send` does it
 * (cli/client.ts): the message carries a fresh reply address, goes through
 * the intake like any channel's (so `/stop`, `/approve` and `/deny` are
 * answered at once), and the turn's messages come back through the
 * address's reply list (bus/reply-lists.ts: a Redis restart while waiting
 * loses none; one that comes twice is taken once, by id). Live snapshots of
 * the answer become text deltas for a streaming client.
 *
 * A turn resumed after `/approve` carries no reply address (no message of
 * the chat started it): the API channel delivers such messages to the
 * session's own address, which the answering request watches, skipping
 * what was there before it began.
 */
import { createHash } from 'node:crypto';
import type { Bus } from '../../bus/bus.js';
import { safeJson } from '../../bus/json-topic.js';
import { runAll } from '../../lifecycle/run-all.js';
import type { AnswerOutcome } from '../../messages/approval.js';
import { LiveUpdateSchema } from '../../messages/live-update.js';
import {
  type InboundMessageInput,
  type OutboundMessage,
  OutboundMessageSchema,
  sessionKeyOf,
} from '../../messages/messages.js';
import { cliLiveChannel } from '../cli/cli-channel.js';
import { busIntakePorts, intake } from '../intake.js';

/** The reply address of a session's messages that name none (a resumed turn's, a reminder's). */
export function sessionAddress(sessionKey: string): string {
  return `api-${createHash('sha256').update(sessionKey).digest('hex').slice(0, 32)}`;
}

/** Token counts of the turn, as the worker puts them on its reply (`metadata.usage`). */
export interface ExchangeUsage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}

/** Where a delta comes from: the model writing, or a whole message. */
export type DeltaSource = 'live' | 'message';

/** How the exchange ended. */
export type ExchangeEnd =
  /** The turn answered (or an at-once command did). */
  | { kind: 'answered'; text: string; messages: string[]; usage?: ExchangeUsage; budget?: boolean }
  /** The turn failed: `text` is what the chat would show. */
  | { kind: 'failed'; text: string }
  /** The time limit passed first. */
  | { kind: 'timeout' }
  /** The client went away (the turn was stopped). */
  | { kind: 'abandoned' };

/** The bus methods an exchange uses. */
export type ExchangeBus = Pick<
  Bus,
  'publishInbound' | 'cancel' | 'answerApproval' | 'watchCliReplies' | 'subscribe' | 'readCliReplies'
>;

export interface ExchangeOptions {
  bus: ExchangeBus;
  message: InboundMessageInput & { metadata: { replyAddress: string } };
  /**
   * Fresh text to show a streaming client (deltas, in order), and whether it is the model writing
   * (`live`) or a whole message (a notice, a mid-turn message, the reply). Absent: only the end counts.
   */
  onDelta?: (text: string, source: DeltaSource) => void;
  /** The request's time limit: past it the exchange ends (`timeout`) and the turn is stopped. */
  timeoutMs: number;
  /** The client went away: the turn is stopped like `/stop`. */
  signal: AbortSignal;
  /**
   * The request may have been sent before (the same Idempotency-Key): what its reply address
   * already holds is taken first, so a retry gets the first attempt's answer.
   */
  replay?: boolean;
}

/**
 * Runs the request's turn and resolves with how it ended. Only a timeout or
 * the client leaving stops the turn; failures of the bus reject (Redis away:
 * the request is answered 503 and nothing was queued, or the turn goes on
 * and its answer stays in the session).
 */
export async function runExchange(o: ExchangeOptions): Promise<ExchangeEnd> {
  // The client left while the request waited for its session's previous one: nothing is sent.
  if (o.signal.aborted) return { kind: 'abandoned' };
  const sessionKey = sessionKeyOf(o.message);
  const collected = new Collected(o.onDelta);
  const ended = new Ending(o.timeoutMs);
  const stops: Array<() => Promise<void>> = [];
  const seen = new Set<string>();
  const take = (payload: string) => {
    const parsed = OutboundMessageSchema.safeParse(safeJson(payload));
    if (ended.done || !parsed.success || seen.has(parsed.data.id)) return;
    seen.add(parsed.data.id);
    if (parsed.data.kind === 'message') collected.message(parsed.data.content);
    else ended.settle(endOf(parsed.data, collected));
  };
  const live = (payload: string) => {
    const parsed = LiveUpdateSchema.safeParse(safeJson(payload));
    if (ended.done || !parsed.success) return;
    collected.live(parsed.data.text);
  };
  const abandon = () => ended.settle({ kind: 'abandoned' });
  o.signal.addEventListener('abort', abandon, { once: true });
  try {
    const own = o.message.metadata.replyAddress;
    stops.push(await o.bus.watchCliReplies(own, take));
    if (o.onDelta) stops.push(await o.bus.subscribe(cliLiveChannel(own), live));
    if (o.replay) for (const payload of await o.bus.readCliReplies(own)) take(payload);
    let outcome: AnswerOutcome | undefined;
    const result = await intake(o.message, {
      publish: (m) => o.bus.publishInbound(m),
      ...busIntakePorts(o.bus),
      approve: async (key, answer) => {
        // Watched before the answer is given, so the resumed turn's first message cannot be missed;
        // what the session's address held before is not this request's.
        const shared = sessionAddress(key);
        for (const old of await o.bus.readCliReplies(shared)) {
          const id = OutboundMessageSchema.safeParse(safeJson(old));
          if (id.success) seen.add(id.data.id);
        }
        stops.push(await o.bus.watchCliReplies(shared, take));
        if (o.onDelta) stops.push(await o.bus.subscribe(cliLiveChannel(shared), live));
        outcome = await o.bus.answerApproval(key, answer);
        return outcome;
      },
      reply: async (text) => collected.message(text),
    });
    // An at-once command is answered now; an answered question goes on in the resumed turn.
    if (result === 'answered' && outcome?.kind !== 'decided')
      ended.settle({ kind: 'answered', text: collected.text(), messages: collected.messages });
    const end = await ended.result;
    if (end.kind === 'timeout' || end.kind === 'abandoned') await o.bus.cancel(sessionKey).catch(() => false);
    return end;
  } finally {
    o.signal.removeEventListener('abort', abandon);
    ended.finish();
    await runAll(stops);
  }
}

function usageOf(message: OutboundMessage): ExchangeUsage | undefined {
  const u = message.metadata.usage as Partial<ExchangeUsage> | undefined;
  if (!u || typeof u.promptTokens !== 'number' || typeof u.completionTokens !== 'number') return undefined;
  return {
    promptTokens: u.promptTokens,
    completionTokens: u.completionTokens,
    cachedTokens: u.cachedTokens ?? 0,
  };
}

function endOf(final: OutboundMessage, collected: Collected): ExchangeEnd {
  if (final.kind === 'error') {
    collected.final(final.content);
    return { kind: 'failed', text: final.content };
  }
  collected.final(final.content);
  const usage = usageOf(final);
  return {
    kind: 'answered',
    text: collected.text(),
    messages: collected.messages,
    ...(usage ? { usage } : {}),
    ...(final.metadata.budget !== undefined ? { budget: true } : {}),
  };
}

/**
 * The answer as the client receives it: mid-turn messages and the final
 * reply, one paragraph each. A streaming client gets what is new of each
 * live snapshot; a snapshot that does not continue the text shown (the
 * model's next iteration after a tool) starts a new paragraph; the final
 * reply adds only what the snapshots had not shown.
 */
class Collected {
  /** Everything the client was given, in order. */
  #parts: string[] = [];
  /** What was shown of the current iteration's live text. */
  #iteration = '';
  /** The messages the turn sent, each whole (mid-turn ones, an at-once answer, the reply). */
  readonly messages: string[] = [];

  constructor(private readonly onDelta: ((text: string, source: DeltaSource) => void) | undefined) {}

  text(): string {
    return this.#parts.join('');
  }

  /** A whole message (mid-turn, or an at-once command's answer). */
  message(content: string): void {
    if (content.trim() === '') return;
    this.messages.push(content);
    this.#iteration = '';
    this.#emit(this.#parts.length > 0 ? `\n\n${content}` : content, 'message');
  }

  /** A live snapshot of the current iteration's text. */
  live(text: string): void {
    if (text === '') return;
    if (text.startsWith(this.#iteration)) {
      this.#emit(text.slice(this.#iteration.length), 'live');
    } else {
      this.#emit(this.#parts.length > 0 ? `\n\n${text}` : text, 'live');
    }
    this.#iteration = text;
  }

  /** The final reply: what the snapshots had not shown of it. */
  final(content: string): void {
    if (this.#iteration !== '' && content.startsWith(this.#iteration)) {
      this.messages.push(content);
      this.#emit(content.slice(this.#iteration.length), 'message');
    } else this.message(content);
    this.#iteration = '';
  }

  #emit(text: string, source: DeltaSource): void {
    if (text === '') return;
    this.#parts.push(text);
    this.onDelta?.(text, source);
  }
}

/** The exchange's end: settled once, by the turn's final message, the client leaving or the time limit. */
class Ending {
  readonly result: Promise<ExchangeEnd>;
  done = false;
  readonly #timer: NodeJS.Timeout;
  #resolve: (end: ExchangeEnd) => void = () => {};

  constructor(timeoutMs: number) {
    this.result = new Promise((resolve) => {
      this.#resolve = resolve;
    });
    this.#timer = setTimeout(() => this.settle({ kind: 'timeout' }), timeoutMs);
    this.#timer.unref();
  }

  settle(end: ExchangeEnd): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.#timer);
    this.#resolve(end);
  }

  finish(): void {
    this.done = true;
    clearTimeout(this.#timer);
  }
}
