/**
 * Learning the user's own Telegram id for TELEGRAM_ALLOW_FROM: after "send any
 * message to @your_bot now", long-poll getUpdates until a private message from
 * a person arrives, and take its sender. Updates older than the wait (a minute
 * of slack for clock skew) and messages from groups or bots are passed over.
 * The captured message itself is not confirmed, so the bot still answers it
 * once magpie runs.
 */
import { botApiFetch, unavailable } from '../../onboard/checks.js';

/** Who wrote to the bot. */
export interface CapturedSender {
  id: string;
  /** `@username` when they have one, else their first name. */
  name: string;
}

/** Options of {@link captureTelegramSender}. */
export interface CaptureOptions {
  token: string;
  apiRoot: string;
  /** How long to wait for the message. @defaultValue 120_000 */
  timeoutMs?: number;
  /** Aborts the wait (Ctrl-C). */
  signal?: AbortSignal;
  /** Messages dated before this (minus a minute) are passed over. @defaultValue now */
  since?: Date;
}

/** Longest single long poll, in seconds (Telegram allows more; short polls notice a deadline sooner). */
const POLL_SECONDS = 20;
const CLOCK_SLACK_S = 60;

/**
 * Waits for a private message to the bot and returns its sender; undefined
 * when none came in time. Another reader of the bot's updates (a webhook, a
 * running magpie) is an AppError with exit 3 saying so.
 */
export async function captureTelegramSender(options: CaptureOptions): Promise<CapturedSender | undefined> {
  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  const since = Math.floor((options.since ?? new Date()).getTime() / 1000) - CLOCK_SLACK_S;
  let offset = 0;
  while (Date.now() < deadline) {
    const seconds = Math.max(1, Math.min(POLL_SECONDS, Math.floor((deadline - Date.now()) / 1000)));
    const updates = await getUpdates(options, offset, seconds);
    for (const update of updates) {
      const sender = senderOf(update, since);
      if (sender) return sender;
      offset = Math.max(offset, update.update_id + 1);
    }
  }
  return undefined;
}

interface TelegramUpdate {
  update_id: number;
  message?: {
    date?: number;
    chat?: { type?: string };
    from?: { id?: number; is_bot?: boolean; username?: string; first_name?: string };
  };
}

function senderOf(update: TelegramUpdate, since: number): CapturedSender | undefined {
  const message = update.message;
  const from = message?.from;
  if (!message || !from || from.is_bot || typeof from.id !== 'number') return undefined;
  if (message.chat?.type !== 'private' || (message.date ?? 0) < since) return undefined;
  return { id: String(from.id), name: from.username ? `@${from.username}` : (from.first_name ?? 'someone') };
}

async function getUpdates(
  options: CaptureOptions,
  offset: number,
  seconds: number,
): Promise<TelegramUpdate[]> {
  const res = await botApiFetch({
    service: 'Telegram',
    apiRoot: options.apiRoot,
    url: `${options.apiRoot}/bot${options.token}/getUpdates`,
    init: {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ offset, timeout: seconds, allowed_updates: ['message'] }),
    },
    // The long poll holds the request for `seconds`; the rest is for the network.
    timeoutMs: (seconds + 10) * 1000,
    signal: options.signal,
  });
  const body = (await res.json().catch(() => ({}))) as {
    ok?: boolean;
    result?: unknown;
    description?: string;
  };
  if (res.status === 409) {
    throw unavailable(
      "another program reads this bot's messages (Telegram answered 409: a webhook, or magpie already running)",
    );
  }
  if (!res.ok || !body.ok || !Array.isArray(body.result)) {
    throw unavailable(`Telegram's getUpdates answered ${res.status}: try again later`);
  }
  return body.result as TelegramUpdate[];
}
