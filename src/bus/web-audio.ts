/**
 * The web chat's spoken replies: the OGG/Opus bytes a page's `<audio>` player
 * loads from `GET /chat/audio`, kept apart from the chat's event stream so the
 * stream (and the page's history) stays small. One Redis hash per chat,
 * `<prefix>:web-audio:<chat>`: a field per clip and an `order` field listing
 * their ids, oldest first. Storing a clip drops the oldest past
 * {@link WEB_AUDIO_MAX} and renews the key's expiry (the kept messages' one
 * day), in one script, so a chat never holds more than the cap.
 */
import type { Redis } from 'ioredis';
import { keys } from './keys.js';
import { type LuaScript, runScript } from './lua.js';
import { WEB_EVENTS_TTL_S } from './web-events.js';

/** Clips kept per chat (oldest dropped first). */
export const WEB_AUDIO_MAX = 10;

/** The largest clip kept, in bytes (a 1500-character answer is well under 1 MB of Opus). */
export const WEB_AUDIO_MAX_BYTES = 4 * 1024 * 1024;

/** What a clip id may look like (an outbound message id: `r-<turn>-voice`). */
export const WEB_AUDIO_ID = /^[A-Za-z0-9_:.-]{1,200}$/;

/** HSET the clip, append its id to `order`, drop the oldest past the cap, EXPIRE. */
const KEEP_SCRIPT: LuaScript = {
  name: 'webAudioKeep',
  keys: 1,
  lua: `
local order = {}
for id in string.gmatch(redis.call('HGET', KEYS[1], 'order') or '', '%S+') do
  if id ~= ARGV[1] then table.insert(order, id) end
end
table.insert(order, ARGV[1])
redis.call('HSET', KEYS[1], 'a:' .. ARGV[1], ARGV[2])
while #order > tonumber(ARGV[3]) do
  redis.call('HDEL', KEYS[1], 'a:' .. table.remove(order, 1))
end
redis.call('HSET', KEYS[1], 'order', table.concat(order, ' '))
redis.call('EXPIRE', KEYS[1], ARGV[4])
return #order`,
};

/** Options of {@link keepWebAudio}. */
export interface KeepWebAudioOptions {
  /** @defaultValue {@link WEB_AUDIO_MAX} */
  max?: number;
  /** @defaultValue {@link WEB_EVENTS_TTL_S} */
  ttlS?: number;
}

/**
 * Keeps a clip under `id` for the chat's pages.
 * @throws RangeError for an id outside {@link WEB_AUDIO_ID} or a clip over {@link WEB_AUDIO_MAX_BYTES}.
 */
export async function keepWebAudio(
  redis: Redis,
  prefix: string,
  chat: string,
  id: string,
  bytes: Buffer,
  options: KeepWebAudioOptions = {},
): Promise<void> {
  if (!WEB_AUDIO_ID.test(id)) throw new RangeError(`web audio id "${id.slice(0, 80)}" is not valid`);
  if (bytes.length > WEB_AUDIO_MAX_BYTES)
    throw new RangeError(`web audio ${id} is over ${WEB_AUDIO_MAX_BYTES} bytes`);
  await runScript(
    redis,
    KEEP_SCRIPT,
    keys.webAudio(prefix, chat),
    id,
    bytes,
    String(options.max ?? WEB_AUDIO_MAX),
    String(options.ttlS ?? WEB_EVENTS_TTL_S),
  );
}

/** The clip kept under `id`, or undefined (never kept, dropped or expired). */
export async function readWebAudio(
  redis: Redis,
  prefix: string,
  chat: string,
  id: string,
): Promise<Buffer | undefined> {
  if (!WEB_AUDIO_ID.test(id)) return undefined;
  return (await redis.hgetBuffer(keys.webAudio(prefix, chat), `a:${id}`)) ?? undefined;
}
