/**
 * `GET /chat/events?chat=…`: one chat's events as Server-Sent Events. The
 * stream first subscribes (so nothing published from then on is missed), then
 * sends the kept messages after the page's `Last-Event-ID` (or `?after=`),
 * then what was published meanwhile and from then on, each kept message once
 * (by its id), and a `ready` event after the catch-up. Kept messages carry
 * their stream id as the SSE id, so the browser's EventSource resumes after
 * the last one it received; live snapshots and typing carry none. A comment
 * line every `heartbeatMs` keeps proxies and the browser from closing an idle
 * stream, and the stream is read again then, so a message whose publish was
 * lost (the subscriber reconnecting) still arrives, one heartbeat late.
 */
import type { Request, Response } from 'express';
import { type DeliveredWebEvent, WEB_EVENT_ID, type WebEventBus } from '../../bus/web-events.js';
import { describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import { isChatId } from './chat-id.js';

/** Options of {@link eventStream}. */
export interface EventStreamOptions {
  bus: Pick<WebEventBus, 'readWebEvents' | 'onWebEvents'>;
  logger: Logger;
  /** Milliseconds between heartbeat comments. @defaultValue 15000 */
  heartbeatMs?: number;
  /** Streams open at once in this process; more get 503. @defaultValue 64 */
  maxStreams?: number;
}

/** The SSE text of one event: `id:` for kept ones, `event:` = its type, one `data:` line of JSON. */
export function sseFrame(delivered: DeliveredWebEvent): string {
  const id = delivered.id ? `id: ${delivered.id}\n` : '';
  return `${id}event: ${delivered.event.type}\ndata: ${JSON.stringify(delivered.event)}\n\n`;
}

/** Compares two stream ids (`<ms>-<n>`): negative when `a` is older. */
export function compareEventIds(a: string, b: string): number {
  const [am = 0n, an = 0n] = a.split('-').map((x) => BigInt(x));
  const [bm = 0n, bn = 0n] = b.split('-').map((x) => BigInt(x));
  if (am !== bm) return am < bm ? -1 : 1;
  return an === bn ? 0 : an < bn ? -1 : 1;
}

/** Kept-message ids a stream remembers having sent (older ones are forgotten first). */
const SENT_IDS_KEPT = 1000;

/** The express handler of the event stream. */
export function eventStream(options: EventStreamOptions) {
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const maxStreams = options.maxStreams ?? 64;
  let open = 0;
  return async (req: Request, res: Response): Promise<void> => {
    const chat = req.query.chat;
    if (!isChatId(chat)) {
      res.status(400).type('text').send('magpie chat: chat must be 1-64 letters, digits, _ or -');
      return;
    }
    const resumeFrom =
      req.get('last-event-id') || (typeof req.query.after === 'string' ? req.query.after : '');
    if (resumeFrom && !WEB_EVENT_ID.test(resumeFrom)) {
      res.status(400).type('text').send('magpie chat: Last-Event-ID is not an event id of this chat');
      return;
    }
    if (open >= maxStreams) {
      res.status(503).type('text').send('magpie chat: too many open chat pages; close one and reload');
      return;
    }
    open += 1;
    // Kept messages sent, by id: each goes out once, whether it came by pub/sub or a read.
    const sent = new Set<string>();
    // Reads of the stream start after this id (the page's, then each read's newest).
    let readFrom = resumeFrom || undefined;
    let replaying = true;
    const held: DeliveredWebEvent[] = [];
    const write = (delivered: DeliveredWebEvent) => {
      if (delivered.id) {
        if (sent.has(delivered.id) || (resumeFrom && compareEventIds(delivered.id, resumeFrom) <= 0)) return;
        sent.add(delivered.id);
        if (sent.size > SENT_IDS_KEPT) sent.delete(sent.values().next().value as string);
      }
      res.write(sseFrame(delivered));
    };
    /** Sends what the stream holds after `readFrom` and was not sent yet (the page missed it). */
    const catchUp = async () => {
      const kept = await options.bus.readWebEvents(chat, readFrom);
      for (const delivered of kept) write(delivered);
      readFrom = kept.at(-1)?.id ?? readFrom;
    };
    let unsubscribe: (() => Promise<void>) | undefined;
    let heartbeat: NodeJS.Timeout | undefined;
    let closed = false;
    req.on('close', () => {
      closed = true;
      open -= 1;
      clearInterval(heartbeat);
      unsubscribe?.().catch((err: unknown) =>
        options.logger.debug({ err: describeError(err), chat }, 'web chat unsubscribe failed'),
      );
    });
    try {
      unsubscribe = await options.bus.onWebEvents(chat, (delivered) => {
        if (replaying) held.push(delivered);
        else write(delivered);
      });
      if (closed) {
        await unsubscribe();
        return;
      }
      res.status(200).set({
        'Content-Type': 'text/event-stream; charset=utf-8',
        'X-Accel-Buffering': 'no',
        Connection: 'keep-alive',
      });
      res.flushHeaders();
      res.write('retry: 2000\n\n');
      await catchUp();
      for (const delivered of held.splice(0)) write(delivered);
      replaying = false;
      // The page knows from here on that everything it missed was sent.
      res.write('event: ready\ndata: {}\n\n');
    } catch (err) {
      options.logger.warn({ err: describeError(err), chat }, 'web chat stream failed to start');
      if (!res.headersSent)
        res.status(503).type('text').send('magpie chat: the bus is unavailable; retrying');
      else res.end();
      return;
    }
    // Each heartbeat also reads the stream again: a message whose publish this process's
    // subscriber missed (Redis reconnecting) still reaches the page, one heartbeat late.
    heartbeat = setInterval(() => {
      res.write(': ping\n\n');
      catchUp().catch((err: unknown) =>
        options.logger.debug({ err: describeError(err), chat }, 'web chat catch-up failed'),
      );
    }, heartbeatMs);
    heartbeat.unref();
  };
}
