/**
 * The web chat's voice routes, mounted by routes.ts under `/chat` (behind the
 * dashboard's token, Host check and Content-Security-Policy, `media-src 'self'`):
 *
 * - `POST /chat/voice?chat=…&id=…` a recording from the page's microphone, the
 *   raw bytes as `audio/webm` or `audio/ogg` (what MediaRecorder makes), at most
 *   `maxVoiceBytes` (413 with one line past it) and, for OGG, at most
 *   `maxVoiceSeconds` long (the page stops recording there; a WebM's length is
 *   not read here, the byte cap bounds it). The same CSRF rule as a message
 *   (same-origin.ts). It becomes an inbound message with an
 *   `audio` attachment, transcribed by the worker like a Telegram voice note
 *   (agent/user-content.ts), so `/voice auto` answers it aloud → 202 `{ id }`.
 * - `GET /chat/audio?chat=…&id=…` a spoken reply's OGG/Opus, kept by WebChannel
 *   (bus/web-audio.ts) → 200 `audio/ogg`, or 206 for one byte `Range` (a
 *   browser reads an OGG's end for its length and seeks by range: without it
 *   the player shows no duration), 404 once dropped or expired.
 */
import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { WebEventBus } from '../../bus/web-events.js';
import { describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import { readOggOpus } from '../../voice/ogg.js';
import { busIntakePorts, intake } from '../intake.js';
import type { ChannelBus } from '../types.js';
import { isChatId } from './chat-id.js';
import { fromThisOrigin } from './same-origin.js';

/** The largest recording by default (2 MiB: minutes of Opus). */
export const MAX_VOICE_BYTES = 2 * 1024 * 1024;

/** The longest recording by default, in seconds (the page stops there). */
export const MAX_VOICE_SECONDS = 120;

/** What the user's bubble says in the chat's other tabs and after a reload. */
export const VOICE_NOTE_TEXT = '🎤 voice message';

/** Options of {@link voiceRoutes}. */
export interface VoiceRoutesOptions {
  bus: Pick<ChannelBus, 'publishInbound' | 'cancel' | 'answerApproval'> &
    Pick<WebEventBus, 'pushWebEvent' | 'readWebAudio'>;
  logger: Logger;
  /** @defaultValue {@link MAX_VOICE_BYTES} */
  maxVoiceBytes?: number;
  /** @defaultValue {@link MAX_VOICE_SECONDS} */
  maxVoiceSeconds?: number;
}

const RECORDING_TYPES = ['audio/webm', 'audio/ogg'] as const;
type RecordingType = (typeof RECORDING_TYPES)[number];

/** The recording's type from its first bytes (EBML for WebM, `OggS`), whatever the header claimed. */
function sniff(bytes: Buffer): RecordingType | undefined {
  if (bytes.length >= 4 && bytes.readUInt32BE(0) === 0x1a45dfa3) return 'audio/webm';
  if (bytes.subarray(0, 4).toString('latin1') === 'OggS') return 'audio/ogg';
  return undefined;
}

/** Answers with `bytes` as audio/ogg: the one range asked for (206), 416 for one outside them, else all. */
function sendRange(req: Request, res: Response, bytes: Buffer): void {
  res.set('Accept-Ranges', 'bytes').type('audio/ogg');
  const ranges = req.range(bytes.length, { combine: true });
  if (ranges === -1) {
    res.status(416).set('Content-Range', `bytes */${bytes.length}`).end();
    return;
  }
  const [range] = Array.isArray(ranges) && ranges.type === 'bytes' && ranges.length === 1 ? ranges : [];
  if (!range) {
    res.status(200).send(bytes);
    return;
  }
  res.status(206).set('Content-Range', `bytes ${range.start}-${range.end}/${bytes.length}`);
  res.send(bytes.subarray(range.start, range.end + 1));
}

/** Builds the voice routes (a Router to mount inside the `/chat` router). */
export function voiceRoutes(options: VoiceRoutesOptions): Router {
  const { bus, logger } = options;
  const maxBytes = options.maxVoiceBytes ?? MAX_VOICE_BYTES;
  const maxSeconds = options.maxVoiceSeconds ?? MAX_VOICE_SECONDS;
  const tooLarge = `magpie chat: the recording is too large (at most ${Math.floor(maxBytes / 1024)} KB)`;
  const router = express.Router();

  router.post(
    '/voice',
    (req: Request, res: Response, next: NextFunction) => {
      if (!RECORDING_TYPES.some((type) => req.is(type))) {
        res.status(415).type('text').send('magpie chat: send the recording as audio/webm or audio/ogg');
        return;
      }
      if (!fromThisOrigin(req)) {
        res.status(403).type('text').send('magpie chat: cross-site request refused');
        return;
      }
      next();
    },
    express.raw({ limit: maxBytes, type: () => true }),
    async (req, res) => {
      const { chat } = req.query;
      const given = req.query.id;
      if (!isChatId(chat) || (given !== undefined && !isChatId(given))) {
        res.status(400).type('text').send('magpie chat: chat and id must be 1-64 letters, digits, _ or -');
        return;
      }
      const bytes = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const type = sniff(bytes);
      if (!type) {
        res.status(415).type('text').send('magpie chat: the recording is not WebM or OGG audio');
        return;
      }
      const seconds = type === 'audio/ogg' ? readOggOpus(bytes)?.durationSeconds : undefined;
      if (seconds !== undefined && seconds > maxSeconds) {
        res.status(413).type('text').send(`magpie chat: the recording is too long (at most ${maxSeconds} s)`);
        return;
      }
      const id = typeof given === 'string' ? given : randomUUID();
      try {
        await bus.pushWebEvent(chat, {
          type: 'user',
          id,
          text: VOICE_NOTE_TEXT,
          at: new Date().toISOString(),
        });
        await intake(
          {
            id: `web:${chat}:${id}`,
            channel: 'web',
            chatId: chat,
            senderId: 'web',
            content: '',
            media: [
              {
                kind: 'audio',
                mimeType: type,
                name: type === 'audio/webm' ? 'voice.webm' : 'voice.ogg',
                size: bytes.length,
                dataUrl: `data:${type};base64,${bytes.toString('base64')}`,
              },
            ],
            platformMessageId: id,
          },
          {
            publish: (message) => bus.publishInbound(message),
            ...busIntakePorts(bus),
            // An empty text is never an at-once command, so nothing is answered here.
            reply: async () => {},
          },
        );
        res.status(202).json({ id });
      } catch (err) {
        logger.warn({ err: describeError(err), chat }, 'web chat voice message not published');
        res.status(503).type('text').send('magpie chat: the bus is unavailable; try again');
      }
    },
  );

  router.get('/audio', async (req, res, next) => {
    const { chat, id } = req.query;
    if (!isChatId(chat) || typeof id !== 'string') {
      res.status(400).type('text').send('magpie chat: chat and id are required');
      return;
    }
    try {
      const bytes = await bus.readWebAudio(chat, id);
      if (!bytes) {
        res
          .status(404)
          .type('text')
          .send('magpie chat: no such audio (kept for a day, the last 10 per chat)');
        return;
      }
      sendRange(req, res, bytes);
    } catch (err) {
      next(err);
    }
  });

  router.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    const errType = (err as { type?: unknown }).type;
    if (errType === 'entity.too.large') res.status(413).type('text').send(tooLarge);
    else if (errType === 'request.aborted') res.status(400).end();
    else next(err);
  });
  return router;
}
