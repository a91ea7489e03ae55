/**
 * What the web chat's pages receive, per chat. Messages (the bot's replies,
 * what the user sent from another tab) are appended to a capped, expiring
 * Redis stream `<prefix>:web-events:<chat>` and published on
 * `<prefix>:web:<chat>` in one script, so the stream entry's id is the SSE
 * event id and a page that reconnects with `Last-Event-ID` reads what it
 * missed from the stream. Signals (live snapshots of an answer being written,
 * typing) are published only: a lost one costs nothing, the next one or the
 * final message covers it.
 *
 * Stream ids are `<ms>-<n>` and only grow, even after the stream expired and
 * was made again, so "after this id" stays meaningful across a long absence.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { Logger } from '../log/index.js';
import { MAX_ACTIONS, OutboundActionSchema } from '../messages/messages.js';
import { safeJson } from './json-topic.js';
import { keys } from './keys.js';
import { type LuaScript, runScript } from './lua.js';
import type { Subscriber } from './subscriber.js';

/** Messages kept per chat for pages that reconnect (oldest dropped first). */
export const WEB_EVENTS_MAX = 200;

/** How long a chat's kept messages live after the last one (seconds). */
export const WEB_EVENTS_TTL_S = 24 * 3600;

/** A Redis stream id as Last-Event-ID carries it back. */
export const WEB_EVENT_ID = /^\d{1,16}-\d{1,10}$/;

const at = z.string().default(() => new Date().toISOString());

/** One event a web chat page receives. */
export const WebEventSchema = z.discriminatedUnion('type', [
  /** A message from the bot: a reply, a message sent mid-turn, an error, a reminder. */
  z.object({
    type: z.literal('message'),
    /** The outbound message id. */
    id: z.string().min(1),
    text: z.string(),
    kind: z.enum(['reply', 'message', 'error']).default('reply'),
    /** The turn whose live snapshots this message replaces. */
    live: z.string().min(1).optional(),
    /** Buttons under the message: a click sends the command as if typed. */
    actions: z.array(OutboundActionSchema).max(MAX_ACTIONS).optional(),
    /** A spoken reply: the page plays `/chat/audio?chat=…&id=<id>` (web-audio.ts keeps the bytes). */
    audio: z.object({ seconds: z.number().nonnegative() }).optional(),
    at,
  }),
  /** A message the user sent (so the chat's other tabs show it). */
  z.object({ type: z.literal('user'), id: z.string().min(1), text: z.string(), at }),
  /** A snapshot of an answer being written (the whole text so far). */
  z.object({
    type: z.literal('live'),
    turn: z.string().min(1),
    text: z.string(),
    progress: z.string().optional(),
    seq: z.number().int().nonnegative(),
  }),
  /** A turn started (true) or ended (false) in the chat. */
  z.object({ type: z.literal('typing'), active: z.boolean() }),
]);
export type WebEvent = z.infer<typeof WebEventSchema>;
export type WebEventInput = z.input<typeof WebEventSchema>;
/** The events that are kept for pages that reconnect. */
export type WebMessageEvent = Extract<WebEvent, { type: 'message' | 'user' }>;
/** The events that are only published. */
export type WebSignal = Extract<WebEvent, { type: 'live' | 'typing' }>;

/** An event as a page receives it: kept ones carry their stream id. */
export interface DeliveredWebEvent {
  /** The stream id (kept events only): the SSE event id. */
  id?: string;
  event: WebEvent;
}

/** The bus methods the web channel and its routes use (implemented by Bus). */
export interface WebEventBus {
  /** Keeps and publishes a message event; resolves to its stream id. */
  pushWebEvent(chat: string, event: WebMessageEvent): Promise<string>;
  /** Publishes a signal (not kept). */
  publishWebSignal(chat: string, event: WebSignal): Promise<void>;
  /** Kept events after `afterId` (all kept ones without it), oldest first, at most `count`. */
  readWebEvents(chat: string, afterId: string | undefined, count?: number): Promise<DeliveredWebEvent[]>;
  /** Keeps a spoken reply's OGG/Opus for the chat's `<audio>` players (web-audio.ts). */
  keepWebAudio(chat: string, id: string, bytes: Buffer): Promise<void>;
  /** A kept spoken reply, or undefined. */
  readWebAudio(chat: string, id: string): Promise<Buffer | undefined>;
  /** The id of the newest kept event, or undefined when none is kept. */
  lastWebEventId(chat: string): Promise<string | undefined>;
  /** Every event published to the chat from now on. Resolves once subscribed; returns the unsubscribe. */
  onWebEvents(chat: string, handler: (delivered: DeliveredWebEvent) => void): Promise<() => Promise<void>>;
}

/** XADD (capped), EXPIRE and PUBLISH of `<id> <json>` in one step; returns the id. */
const PUSH_SCRIPT: LuaScript = {
  name: 'webEventPush',
  keys: 1,
  lua: `
local id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '*', 'event', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('PUBLISH', ARGV[4], id .. ' ' .. ARGV[2])
return id`,
};

/** Options of {@link pushWebEvent}. */
export interface PushWebEventOptions {
  /** @defaultValue {@link WEB_EVENTS_MAX} */
  max?: number;
  /** @defaultValue {@link WEB_EVENTS_TTL_S} */
  ttlS?: number;
}

/** Appends a message event to the chat's stream and publishes it, atomically. Resolves to its id. */
export async function pushWebEvent(
  redis: Redis,
  prefix: string,
  chat: string,
  event: WebMessageEvent,
  options: PushWebEventOptions = {},
): Promise<string> {
  const id = await runScript(
    redis,
    PUSH_SCRIPT,
    keys.webEvents(prefix, chat),
    String(options.max ?? WEB_EVENTS_MAX),
    JSON.stringify(event),
    String(options.ttlS ?? WEB_EVENTS_TTL_S),
    keys.web(prefix, chat),
  );
  return String(id);
}

/** Publishes a signal to the chat's open pages. */
export async function publishWebSignal(
  redis: Redis,
  prefix: string,
  chat: string,
  event: WebSignal,
): Promise<void> {
  await redis.publish(keys.web(prefix, chat), ` ${JSON.stringify(event)}`);
}

/** Kept events after `afterId` (exclusive), oldest first. Malformed entries are skipped. */
export async function readWebEvents(
  redis: Redis,
  prefix: string,
  chat: string,
  afterId: string | undefined,
  count = WEB_EVENTS_MAX,
): Promise<DeliveredWebEvent[]> {
  const start = afterId === undefined ? '-' : `(${afterId}`;
  const entries = await redis.xrange(keys.webEvents(prefix, chat), start, '+', 'COUNT', count);
  const events: DeliveredWebEvent[] = [];
  for (const [id, fields] of entries) {
    const parsed = WebEventSchema.safeParse(safeJson(fields[1] ?? ''));
    if (parsed.success) events.push({ id, event: parsed.data });
  }
  return events;
}

/** The id of the chat's newest kept event. */
export async function lastWebEventId(
  redis: Redis,
  prefix: string,
  chat: string,
): Promise<string | undefined> {
  const [last] = await redis.xrevrange(keys.webEvents(prefix, chat), '+', '-', 'COUNT', 1);
  return last?.[0];
}

/** Subscribes to everything published to a chat; malformed payloads are logged and skipped. */
export function subscribeWebEvents(
  subscriber: Subscriber,
  prefix: string,
  chat: string,
  handler: (delivered: DeliveredWebEvent) => void,
  logger: Logger,
): Promise<() => Promise<void>> {
  return subscriber.subscribe(keys.web(prefix, chat), (payload) => {
    const space = payload.indexOf(' ');
    const id = payload.slice(0, Math.max(0, space));
    const parsed = WebEventSchema.safeParse(safeJson(payload.slice(space + 1)));
    if (space < 0 || !parsed.success) {
      logger.warn({ chat, payload: payload.slice(0, 200) }, 'malformed web chat event skipped');
      return;
    }
    handler(id ? { id, event: parsed.data } : { event: parsed.data });
  });
}
