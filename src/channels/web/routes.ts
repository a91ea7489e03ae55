/**
 * The web chat's HTTP side, an express Router the dashboard mounts at `/chat`
 * behind its token, Host check and Content-Security-Policy:
 *
 * - `GET /chat` the page, `GET /chat/app.js`, `/chat/render.js`, `/chat/app.css` its static parts;
 * - `POST /chat/messages` `{ chat, text, id? }` (JSON, at most `maxBodyBytes`) → 202 `{ id }`:
 *   handed to the intake like any channel's message (`/stop` cancels at once and is answered here);
 * - `GET /chat/events?chat=…` the chat's events (event-stream.ts);
 * - `POST /chat/voice?chat=…&id=…` a recording from the page's microphone, `GET /chat/audio?chat=…&id=…`
 *   a spoken reply's OGG/Opus (voice-routes.ts);
 * - `GET /chat/history?chat=…` the conversation so far (history.ts: the session and the kept
 *   messages no session holds) and the id of the newest kept event, after which the page's event
 *   stream starts.
 *
 * A POST must say `Content-Type: application/json` and come from this origin:
 * an `Origin` or `Sec-Fetch-Site` naming another site is refused, and a request
 * showing neither must carry the token itself (`Authorization: Bearer`), not
 * just the browser's cookie. So another web page cannot post into the chat.
 */
import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { WebEventBus } from '../../bus/web-events.js';
import { describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { SessionStore } from '../../sessions/types.js';
import { busIntakePorts, intake } from '../intake.js';
import type { ChannelBus } from '../types.js';
import { APP_SCRIPT } from './assets/app-script.js';
import { chatPage, PAGE_STYLE } from './assets/page.js';
import { RENDER_SCRIPT } from './assets/render-script.js';
import { isChatId } from './chat-id.js';
import { eventStream } from './event-stream.js';
import { chatHistory, HISTORY_LIMIT, withKeptMessages } from './history.js';
import { fromThisOrigin } from './same-origin.js';
import { voiceRoutes } from './voice-routes.js';

/** What the routes need from the bus. */
export type WebChatBus = Pick<ChannelBus, 'publishInbound' | 'cancel' | 'answerApproval'> & WebEventBus;

/** Options of {@link createWebChatRouter}. */
export interface WebChatRouterOptions {
  bus: WebChatBus;
  /** Where the conversation is read back after a reload. */
  sessions: Pick<SessionStore, 'getHistory'>;
  logger: Logger;
  /** Largest request body of `POST /chat/messages`, in bytes. @defaultValue 16384 */
  maxBodyBytes?: number;
  /** Messages `GET /chat/history` returns at most. @defaultValue 100 */
  historyLimit?: number;
  /** Milliseconds between the event stream's heartbeat comments. @defaultValue 15000 */
  heartbeatMs?: number;
  /** Event streams open at once in this process. @defaultValue 64 */
  maxStreams?: number;
  /** Largest recording `POST /chat/voice` takes, in bytes. @defaultValue 2 MiB (voice-routes.ts) */
  maxVoiceBytes?: number;
  /** Longest OGG recording `POST /chat/voice` takes, in seconds. @defaultValue 120 (voice-routes.ts) */
  maxVoiceSeconds?: number;
}

/** The largest message body by default (16 KiB). */
export const MAX_BODY_BYTES = 16 * 1024;

/** Builds the `/chat` router. */
export function createWebChatRouter(options: WebChatRouterOptions): Router {
  const { bus, logger } = options;
  const maxBodyBytes = options.maxBodyBytes ?? MAX_BODY_BYTES;
  const router = express.Router();

  router.get('/', (_req, res) => {
    res.type('html').send(chatPage());
  });
  router.get('/app.js', (_req, res) => {
    res.type('text/javascript').send(APP_SCRIPT);
  });
  router.get('/render.js', (_req, res) => {
    res.type('text/javascript').send(RENDER_SCRIPT);
  });
  router.get('/app.css', (_req, res) => {
    res.type('text/css').send(PAGE_STYLE);
  });

  router.post(
    '/messages',
    sameOriginOnly,
    express.json({ limit: maxBodyBytes, strict: true, type: () => true }),
    async (req, res) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      const { chat, text } = body;
      if (!isChatId(chat)) {
        res.status(400).type('text').send('magpie chat: chat must be 1-64 letters, digits, _ or -');
        return;
      }
      if (typeof text !== 'string' || text.trim() === '') {
        res.status(400).type('text').send('magpie chat: the message is empty');
        return;
      }
      if (body.id !== undefined && !isChatId(body.id)) {
        res.status(400).type('text').send('magpie chat: id must be 1-64 letters, digits, _ or -');
        return;
      }
      const id = typeof body.id === 'string' ? body.id : randomUUID();
      try {
        await bus.pushWebEvent(chat, { type: 'user', id, text, at: new Date().toISOString() });
        await intake(
          {
            id: `web:${chat}:${id}`,
            channel: 'web',
            chatId: chat,
            senderId: 'web',
            content: text,
            platformMessageId: id,
          },
          {
            publish: (message) => bus.publishInbound(message),
            ...busIntakePorts(bus),
            reply: async (answer) => {
              await bus.pushWebEvent(chat, {
                type: 'message',
                id: `stop-${id}`,
                text: answer,
                // Not the turn's end (that reply follows): typing goes on, and the history keeps it.
                kind: 'message',
                at: new Date().toISOString(),
              });
            },
          },
        );
        res.status(202).json({ id });
      } catch (err) {
        logger.warn({ err: describeError(err), chat }, 'web chat message not published');
        res.status(503).type('text').send('magpie chat: the bus is unavailable; try again');
      }
    },
  );

  router.use(
    voiceRoutes({
      bus,
      logger,
      ...(options.maxVoiceBytes ? { maxVoiceBytes: options.maxVoiceBytes } : {}),
      ...(options.maxVoiceSeconds ? { maxVoiceSeconds: options.maxVoiceSeconds } : {}),
    }),
  );

  router.get('/history', async (req, res, next) => {
    const chat = req.query.chat;
    if (!isChatId(chat)) {
      res.status(400).type('text').send('magpie chat: chat must be 1-64 letters, digits, _ or -');
      return;
    }
    try {
      // The cursor first: every message kept up to it was written to the session before, and the
      // page's event stream starts after it.
      const cursor = await bus.lastWebEventId(chat);
      const limit = options.historyLimit ?? HISTORY_LIMIT;
      const [lines, kept] = await Promise.all([
        chatHistory(options.sessions, chat, limit),
        bus.readWebEvents(chat, undefined),
      ]);
      res.json({ chat, messages: withKeptMessages(lines, kept, cursor, limit), cursor: cursor ?? null });
    } catch (err) {
      next(err);
    }
  });

  router.get(
    '/events',
    eventStream({
      bus,
      logger,
      ...(options.heartbeatMs ? { heartbeatMs: options.heartbeatMs } : {}),
      ...(options.maxStreams ? { maxStreams: options.maxStreams } : {}),
    }),
  );

  router.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    const type = (err as { type?: unknown }).type;
    if (type === 'entity.too.large') {
      res
        .status(413)
        .type('text')
        .send(`magpie chat: message too large (at most ${Math.floor(maxBodyBytes / 1024)} KB)`);
    } else if (type === 'entity.parse.failed') {
      res.status(400).type('text').send('magpie chat: the body is not JSON');
    } else if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
      res.status(415).type('text').send('magpie chat: send UTF-8 JSON');
    } else {
      next(err);
    }
  });
  return router;
}

/**
 * CSRF guard of the POST: JSON only, and the request must come from this origin ({@link fromThisOrigin}).
 */
function sameOriginOnly(req: Request, res: Response, next: NextFunction): void {
  if (!req.is('application/json')) {
    res.status(415).type('text').send('magpie chat: send Content-Type: application/json');
    return;
  }
  if (!fromThisOrigin(req)) {
    res.status(403).type('text').send('magpie chat: cross-site request refused');
    return;
  }
  next();
}
