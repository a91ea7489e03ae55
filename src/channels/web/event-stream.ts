/**
 * `GET /chat/events?chat=…`: one chat's events as Server-Sent Events. The
 * stream first subscribes (so nothing published from then on is missed), then
 * sends the kept messages after the page's `Last-Event-ID` (or `?after=`),
 * then what was published meanwhile and from then on, each kept message once
 * (by its id). Kept messages carry their stream id as the SSE id, so the
 * browser's EventSource resumes after the last one it received; live
 * snapshots and typing carry none. A `ready` event follows the catch-up. A comment line every `heartbeatMs` keeps
 * proxies and the browser from closing an idle stream.
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
    let last = resumeFrom || undefined;
    let replaying = true;
    const held: DeliveredWebEvent[] = [];
    const write = (delivered: DeliveredWebEvent) => {
      if (delivered.id) {
        if (last && compareEventIds(delivered.id, last) <= 0) return;
        last = delivered.id;
      }
      res.write(sseFrame(delivered));
    };
    let unsubscribe: (() => Promise<void>) | undefined;
    let heartbeat: NodeJS.Timeout | undefined;
    let closed = false;
    const cleanUp = () => {
      if (closed) return;
      closed = true;
      open -= 1;
      clearInterval(heartbeat);
      unsubscribe?.().catch((err: unknown) =>
        options.logger.debug({ err: describeError(err), chat }, 'web chat unsubscribe failed'),
      );
    };
    req.on('close', cleanUp);
    try {
      unsubscribe = await options.bus.onWebEvents(chat, (delivered) => {
        if (replaying) held.push(delivered);
        else write(delivered);
      });
      if (closed) {
        cleanUp();
        await unsubscribe();
        return;
      }
      const missed = await options.bus.readWebEvents(chat, last);
      res.status(200).set({
        'Content-Type': 'text/event-stream; charset=utf-8',
        'X-Accel-Buffering': 'no',
        Connection: 'keep-alive',
      });
      res.flushHeaders();
      res.write(`retry: 2000\n\n`);
      for (const delivered of missed) write(delivered);
      for (const delivered of held.splice(0)) write(delivered);
      replaying = false;
      // The page knows from here on that everything it missed was sent.
      res.write('event: ready\ndata: {}\n\n');
      heartbeat = setInterval(() => res.write(': ping\n\n'), heartbeatMs);
      heartbeat.unref();
    } catch (err) {
      cleanUp();
      options.logger.warn({ err: describeError(err), chat }, 'web chat stream failed to start');
      if (!res.headersSent)
        res.status(503).type('text').send('magpie chat: the bus is unavailable; retrying');
      else res.end();
    }
  };
}
