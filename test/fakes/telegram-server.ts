/**
 * A fake Telegram Bot API on 127.0.0.1 (node:http) for the real telegraf client:
 * `/bot<token>/<method>` and `/file/bot<token>/<path>`. getUpdates honours
 * `offset` (confirming earlier updates) and `timeout` (holds the request until an
 * update is queued). sendMessage checks Telegram's HTML subset and the 4096 limit
 * like the real API. editMessageText and deleteMessage act on the messages sent
 * (same checks, "message is not modified", "message to edit not found"); edits and
 * deletions are recorded and `shown` gives what a chat finally displays. Every call
 * is recorded; errors can be scripted with failNext / failEdits.
 *
 * Inline keyboards: a message's `reply_markup` is kept (sendMessage, editMessageText —
 * which drops the keyboard when it is not given again, as Telegram does — and
 * editMessageReplyMarkup); `pressButton` delivers the `callback_query` a user's press of a
 * shown button makes; answerCallbackQuery answers a delivered query once. getUpdates
 * honours `allowed_updates` (kept until given again, as Telegram does).
 */
import { randomInt } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One recorded API call. */
export interface TelegramCall {
  method: string;
  params: Record<string, unknown>;
  at: number;
}

/** An error reply as the Bot API sends it. */
export interface TelegramErrorReply {
  error_code: number;
  description: string;
  parameters?: { retry_after?: number; migrate_to_chat_id?: number };
}

/** An inline keyboard as a message shows it. */
export interface InlineKeyboardMarkup {
  inline_keyboard: Array<Array<{ text: string; callback_data?: string }>>;
}

/** A message the bot sent (sendMessage payload plus the id the fake gave it). */
export interface SentMessage {
  message_id: number;
  chat_id: string;
  text: string;
  parse_mode?: string;
  message_thread_id?: number;
  reply_to_message_id?: number;
  /** The inline keyboard it was sent with. */
  reply_markup?: InlineKeyboardMarkup;
}

/** A voice note the bot sent (sendVoice, multipart: the file's bytes as uploaded). */
export interface SentVoice {
  message_id: number;
  chat_id: string;
  duration?: number;
  message_thread_id?: number;
  reply_to_message_id?: number;
  /** The uploaded file's bytes. */
  voice: Buffer;
  /** Its content type as uploaded. */
  mimeType: string;
}

/** One editMessageText call on a chat's message, whatever its outcome. */
export interface TelegramEdit {
  chat_id: string;
  message_id: number;
  text: string;
  parse_mode?: string;
  at: number;
  /** `edited`: the message now shows `text`; `not_modified`: it already did (a 400); `failed`: refused. */
  outcome: 'edited' | 'not_modified' | 'failed';
  /** The error description when not edited. */
  error?: string;
}

/** One deleteMessage call. */
export interface TelegramDeletion {
  chat_id: string;
  message_id: number;
  at: number;
  outcome: 'deleted' | 'failed';
  error?: string;
}

/** A message as the chat shows it now (after edits). */
export interface ShownMessage {
  message_id: number;
  text: string;
  parse_mode?: string;
  /** Successful edits it went through. */
  edits: number;
  /** Its inline keyboard now (absent: no buttons). */
  reply_markup?: InlineKeyboardMarkup;
}

/** One answerCallbackQuery call. */
export interface TelegramCallbackAnswer {
  callback_query_id: string;
  text?: string;
  at: number;
  /** `answered`; `failed`: an unknown query or one answered already (Telegram's 400). */
  outcome: 'answered' | 'failed';
}

/** One editMessageReplyMarkup call. */
export interface TelegramMarkupEdit {
  chat_id: string;
  message_id: number;
  /** The keyboard asked for (absent or no rows: the buttons go). */
  reply_markup?: InlineKeyboardMarkup;
  at: number;
  outcome: 'edited' | 'not_modified' | 'failed';
  error?: string;
}

/** Who presses a button, and where. */
export interface ButtonPress {
  chatId: string | number;
  messageId: number;
  /** The pressed button's `callback_data`: it must be on the message now (a user presses what they see). */
  data: string;
  from: { id: number; first_name?: string; last_name?: string; username?: string; is_bot?: boolean };
}

/** A delivered press: the update queued and its callback query's id. */
export interface DeliveredPress {
  updateId: number;
  queryId: string;
  /** The update as queued (push it again, without `update_id`, to deliver the press twice). */
  update: Record<string, unknown>;
}

export interface FakeTelegramOptions {
  token?: string;
  botUsername?: string;
  /**
   * When set, an edit in a chat less than this many ms after that chat's last
   * successful edit is refused with 429 (retry_after in whole seconds), as
   * Telegram does to bots editing too fast. @defaultValue undefined (no limit)
   */
  editIntervalMs?: number;
}

export interface FakeTelegram {
  /** Pass as `TELEGRAM_API_ROOT` / telegraf `apiRoot`. */
  apiRoot: string;
  token: string;
  bot: { id: number; username: string; first_name: string };
  calls: TelegramCall[];
  /** Queues an update (update_id assigned when missing) and wakes a held getUpdates. Returns its id. */
  pushUpdate(update: Record<string, unknown>): number;
  /** The next `times` calls of `method` fail with `reply`. */
  failNext(method: string, reply: TelegramErrorReply, times?: number): void;
  /** Resolves once `predicate()` holds (checked after every call), rejects after `timeoutMs`. */
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  /** Messages sent to a chat, in order (as sent; edits do not change them). */
  sent(chatId: string | number): SentMessage[];
  /** Voice notes sent to a chat (sendVoice), in order. */
  voices(chatId: string | number): SentVoice[];
  /** Every editMessageText call, in order (refused ones too; see `outcome`). */
  edits: TelegramEdit[];
  /** Every deleteMessage call, in order. */
  deletions: TelegramDeletion[];
  /** The texts a chat shows now: its not-deleted messages in order, each with its latest edit. */
  shown(chatId: string | number): string[];
  /** Like {@link FakeTelegram.shown} with ids, parse modes and edit counts. */
  shownMessages(chatId: string | number): ShownMessage[];
  /**
   * The next `times` editMessageText calls fail: `rate_limited` with 429 and
   * `retry_after` (seconds, default 1), `not_found` with 400 "message to edit not found".
   */
  failEdits(times: number, kind: 'rate_limited' | 'not_found', retryAfterSeconds?: number): void;
  /** Serves `bytes` for `getFile(fileId)` and its download path. */
  addFile(fileId: string, bytes: Uint8Array): void;
  /**
   * A user presses a button of a message the bot sent: queues the `callback_query` update Telegram
   * makes (the message with its chat and keyboard, `from`, `data`). Throws when the message does not
   * show a button with that data now.
   */
  pressButton(press: ButtonPress): DeliveredPress;
  /** Every answerCallbackQuery call, in order. */
  callbackAnswers: TelegramCallbackAnswer[];
  /** Every editMessageReplyMarkup call, in order. */
  markupEdits: TelegramMarkupEdit[];
  /** Updates not yet confirmed by an offset. */
  pendingUpdates(): number;
  close(): Promise<void>;
}

const ALLOWED_TAGS = new Set([
  'b',
  'strong',
  'i',
  'em',
  'u',
  'ins',
  's',
  'strike',
  'del',
  'a',
  'code',
  'pre',
  'blockquote',
  'tg-spoiler',
  'span',
  'tg-emoji',
]);

/** Checks `text` the way Telegram parses HTML: known tags, balanced, valid entities. */
export function checkTelegramHtml(text: string): string | undefined {
  const stack: string[] = [];
  const tag = /<(\/?)([a-z-]+)((?:\s+[a-z-]+="[^"<>]*")*)\s*>|&(#\d+|#x[0-9a-f]+|[a-z]+);|[<>&]/giy;
  for (let i = 0; i < text.length; ) {
    const ch = text[i];
    if (ch !== '<' && ch !== '&' && ch !== '>') {
      i++;
      continue;
    }
    tag.lastIndex = i;
    const m = tag.exec(text);
    if (!m || m[0] === '<' || m[0] === '&')
      return `Can't find end of the entity starting at byte offset ${i}`;
    if (m[0] === '>') {
      i++;
      continue;
    }
    if (m[4] !== undefined) {
      if (!/^(#\d+|#x[0-9a-f]+|lt|gt|amp|quot)$/i.test(m[4])) return `Unsupported entity "${m[4]}"`;
    } else {
      const name = m[2]!.toLowerCase();
      if (!ALLOWED_TAGS.has(name)) return `Unsupported start tag "${name}" at byte offset ${i}`;
      if (m[1] === '/') {
        if (stack.pop() !== name) return `Unexpected end tag at byte offset ${i}`;
      } else stack.push(name);
    }
    i += m[0].length;
  }
  return stack.length > 0 ? `Can't find end tag corresponding to start tag "${stack.at(-1)}"` : undefined;
}

/** Starts the fake on a free loopback port. */
export async function startFakeTelegram(options: FakeTelegramOptions = {}): Promise<FakeTelegram> {
  const token = options.token ?? '123456:TEST-token';
  const bot = { id: 999_000_111, username: options.botUsername ?? 'magpie_test_bot', first_name: 'Magpie' };
  const calls: TelegramCall[] = [];
  const events = new EventEmitter();
  events.setMaxListeners(0);
  const failures = new Map<string, TelegramErrorReply[]>();
  const files = new Map<string, { bytes: Uint8Array; path: string }>();
  let updates: Array<Record<string, unknown> & { update_id: number }> = [];
  let nextUpdateId = 1;
  let nextMessageId = 10_000;
  const sentMessages: SentMessage[] = [];
  const sentVoices: SentVoice[] = [];
  /** Current state of every sent message, by `chat:id`. */
  const current = new Map<string, ShownMessage & { chat_id: string; deleted: boolean; thread?: number }>();
  const edits: TelegramEdit[] = [];
  const deletions: TelegramDeletion[] = [];
  const lastEditAt = new Map<string, number>();
  const sockets = new Set<import('node:net').Socket>();
  /** The chats the fake has seen in queued updates, by id (a press's message names its chat). */
  const chats = new Map<string, Record<string, unknown>>();
  /** Callback queries delivered, and whether each was answered. */
  const queries = new Map<string, { answered: boolean }>();
  const callbackAnswers: TelegramCallbackAnswer[] = [];
  const markupEdits: TelegramMarkupEdit[] = [];
  /** The update types getUpdates returns (`allowed_updates`); undefined: all. */
  let allowedUpdates: string[] | undefined;
  let nextQueryId = 1;

  const reply = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const ok = (res: ServerResponse, result: unknown) => reply(res, 200, { ok: true, result });
  const error = (res: ServerResponse, e: TelegramErrorReply) => reply(res, e.error_code, { ok: false, ...e });

  const takeUpdates = (offset: number, limit: number) => {
    if (offset > 0) updates = updates.filter((u) => u.update_id >= offset);
    // Telegram never delivers a kind of update the bot did not ask for.
    const allowed = allowedUpdates;
    if (allowed) updates = updates.filter((u) => Object.keys(u).some((k) => allowed.includes(k)));
    return updates.slice(0, limit);
  };

  const handleGetUpdates = async (res: ServerResponse, p: Record<string, unknown>) => {
    if (Array.isArray(p.allowed_updates) && p.allowed_updates.length > 0) {
      allowedUpdates = p.allowed_updates.map(String);
    }
    const offset = Number(p.offset ?? 0);
    const limit = Math.min(Math.max(Number(p.limit ?? 100), 1), 100);
    const timeoutS = Number(p.timeout ?? 0);
    let batch = takeUpdates(offset, limit);
    if (batch.length === 0 && timeoutS > 0) {
      const ac = new AbortController();
      const onClose = () => ac.abort();
      res.on('close', onClose);
      const timer = setTimeout(() => ac.abort(), timeoutS * 1000);
      try {
        await once(events, 'update', { signal: ac.signal });
      } catch (err) {
        if ((err as Error).name !== 'AbortError') throw err;
      } finally {
        clearTimeout(timer);
        res.off('close', onClose);
      }
      if (res.destroyed) return; // the client went away (aborted long poll)
      batch = takeUpdates(offset, limit);
    }
    ok(res, batch);
  };

  const handleMethod = async (method: string, p: Record<string, unknown>, res: ServerResponse) => {
    const queued = failures.get(method);
    if (queued && queued.length > 0) {
      const failure = queued.shift()!;
      if (method === 'editMessageText') recordEdit(p, 'failed', failure.description);
      if (method === 'deleteMessage') recordDeletion(p, 'failed', failure.description);
      return error(res, failure);
    }
    switch (method) {
      case 'getMe':
        return ok(res, { ...bot, is_bot: true, can_join_groups: true, can_read_all_group_messages: false });
      case 'getUpdates':
        return handleGetUpdates(res, p);
      case 'setMyCommands':
      case 'deleteWebhook':
        return ok(res, true);
      case 'sendChatAction':
        return ok(res, true);
      case 'sendMessage':
        return handleSendMessage(p, res);
      case 'editMessageText':
        return handleEditMessageText(p, res);
      case 'deleteMessage':
        return handleDeleteMessage(p, res);
      case 'answerCallbackQuery':
        return handleAnswerCallbackQuery(p, res);
      case 'editMessageReplyMarkup':
        return handleEditMessageReplyMarkup(p, res);
      case 'sendVoice': {
        const voice = p.voice;
        if (!(voice instanceof Blob)) {
          return error(res, {
            error_code: 400,
            description: 'Bad Request: there is no voice in the request',
          });
        }
        const replyTo = (p.reply_parameters as { message_id?: number } | undefined)?.message_id;
        const sentVoice: SentVoice = {
          message_id: nextMessageId++,
          chat_id: String(p.chat_id),
          voice: Buffer.from(await voice.arrayBuffer()),
          mimeType: voice.type,
          ...(p.duration !== undefined ? { duration: Number(p.duration) } : {}),
          ...(p.message_thread_id !== undefined ? { message_thread_id: Number(p.message_thread_id) } : {}),
          ...(replyTo !== undefined ? { reply_to_message_id: Number(replyTo) } : {}),
        };
        sentVoices.push(sentVoice);
        return ok(res, { message_id: sentVoice.message_id, chat: { id: Number(p.chat_id) }, date: 0 });
      }
      case 'getFile': {
        const file = files.get(String(p.file_id));
        if (!file) return error(res, { error_code: 400, description: 'Bad Request: invalid file_id' });
        return ok(res, {
          file_id: p.file_id,
          file_unique_id: `u-${p.file_id}`,
          file_size: file.bytes.length,
          file_path: file.path,
        });
      }
      default:
        return error(res, { error_code: 404, description: 'Not Found: method not found' });
    }
  };

  const handleSendMessage = (p: Record<string, unknown>, res: ServerResponse) => {
    const text = typeof p.text === 'string' ? p.text : '';
    if (text.trim() === '')
      return error(res, { error_code: 400, description: 'Bad Request: message text is empty' });
    if (p.parse_mode === 'HTML') {
      const problem = checkTelegramHtml(text);
      if (problem)
        return error(res, { error_code: 400, description: `Bad Request: can't parse entities: ${problem}` });
    }
    const visible = p.parse_mode === 'HTML' ? visibleLength(text) : text.length;
    if (visible > 4096)
      return error(res, { error_code: 400, description: 'Bad Request: message is too long' });
    const markup = readMarkup(p.reply_markup);
    if (markup === 'invalid')
      return error(res, { error_code: 400, description: 'Bad Request: BUTTON_DATA_INVALID' });
    const replyParams = p.reply_parameters as { message_id?: number } | undefined;
    const message: SentMessage = {
      message_id: nextMessageId++,
      chat_id: String(p.chat_id),
      text,
      ...(typeof p.parse_mode === 'string' ? { parse_mode: p.parse_mode } : {}),
      ...(p.message_thread_id !== undefined ? { message_thread_id: Number(p.message_thread_id) } : {}),
      ...(replyParams?.message_id !== undefined ? { reply_to_message_id: replyParams.message_id } : {}),
      ...(markup ? { reply_markup: markup } : {}),
    };
    sentMessages.push(message);
    current.set(`${message.chat_id}:${message.message_id}`, {
      chat_id: message.chat_id,
      message_id: message.message_id,
      text,
      ...(message.parse_mode ? { parse_mode: message.parse_mode } : {}),
      edits: 0,
      deleted: false,
      ...(message.message_thread_id !== undefined ? { thread: message.message_thread_id } : {}),
      ...(markup ? { reply_markup: markup } : {}),
    });
    return ok(res, {
      message_id: message.message_id,
      date: now(),
      chat: chatOf(message.chat_id),
      from: { ...bot, is_bot: true },
      text,
      ...(markup ? { reply_markup: markup } : {}),
    });
  };

  /** The chat object of a chat id: as seen in updates, else a private chat (positive ids) or a supergroup. */
  const chatOf = (chatId: string): Record<string, unknown> =>
    chats.get(chatId) ??
    (Number(chatId) > 0
      ? { id: Number(chatId), type: 'private', first_name: 'User' }
      : { id: Number(chatId), type: 'supergroup', title: 'Group' });

  const recordEdit = (p: Record<string, unknown>, outcome: TelegramEdit['outcome'], problem?: string) => {
    edits.push({
      chat_id: String(p.chat_id),
      message_id: Number(p.message_id),
      text: typeof p.text === 'string' ? p.text : '',
      ...(typeof p.parse_mode === 'string' ? { parse_mode: p.parse_mode } : {}),
      at: Date.now(),
      outcome,
      ...(problem !== undefined ? { error: problem } : {}),
    });
  };
  const recordDeletion = (
    p: Record<string, unknown>,
    outcome: TelegramDeletion['outcome'],
    problem?: string,
  ) => {
    deletions.push({
      chat_id: String(p.chat_id),
      message_id: Number(p.message_id),
      at: Date.now(),
      outcome,
      ...(problem !== undefined ? { error: problem } : {}),
    });
  };

  const handleEditMessageText = (p: Record<string, unknown>, res: ServerResponse) => {
    const refuse = (e: TelegramErrorReply, outcome: TelegramEdit['outcome'] = 'failed') => {
      recordEdit(p, outcome, e.description);
      return error(res, e);
    };
    if (p.inline_message_id !== undefined)
      return refuse({ error_code: 400, description: 'Bad Request: MESSAGE_ID_INVALID' });
    const message = current.get(`${String(p.chat_id)}:${Number(p.message_id)}`);
    if (!message || message.deleted)
      return refuse({ error_code: 400, description: 'Bad Request: message to edit not found' });
    const text = typeof p.text === 'string' ? p.text : '';
    if (text.trim() === '')
      return refuse({ error_code: 400, description: 'Bad Request: message text is empty' });
    if (p.parse_mode === 'HTML') {
      const problem = checkTelegramHtml(text);
      if (problem)
        return refuse({ error_code: 400, description: `Bad Request: can't parse entities: ${problem}` });
    }
    if ((p.parse_mode === 'HTML' ? visibleLength(text) : text.length) > 4096)
      return refuse({ error_code: 400, description: 'Bad Request: MESSAGE_TOO_LONG' });
    // Without reply_markup an edit leaves the message with no inline keyboard.
    const markup = readMarkup(p.reply_markup);
    if (markup === 'invalid')
      return refuse({ error_code: 400, description: 'Bad Request: BUTTON_DATA_INVALID' });
    if (
      text === message.text &&
      p.parse_mode === message.parse_mode &&
      sameMarkup(markup, message.reply_markup)
    )
      return refuse(
        {
          error_code: 400,
          description:
            'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
        },
        'not_modified',
      );
    const last = lastEditAt.get(message.chat_id);
    if (
      options.editIntervalMs !== undefined &&
      last !== undefined &&
      Date.now() - last < options.editIntervalMs
    ) {
      const after = Math.max(1, Math.ceil((options.editIntervalMs - (Date.now() - last)) / 1000));
      return refuse({
        error_code: 429,
        description: `Too Many Requests: retry after ${after}`,
        parameters: { retry_after: after },
      });
    }
    lastEditAt.set(message.chat_id, Date.now());
    message.text = text;
    if (typeof p.parse_mode === 'string') message.parse_mode = p.parse_mode;
    else delete message.parse_mode;
    if (markup) message.reply_markup = markup;
    else delete message.reply_markup;
    message.edits++;
    recordEdit(p, 'edited');
    return ok(res, {
      message_id: message.message_id,
      date: now(),
      edit_date: now(),
      chat: { id: Number(p.chat_id) || p.chat_id, type: 'private' },
      from: { ...bot, is_bot: true },
      text,
    });
  };

  const handleDeleteMessage = (p: Record<string, unknown>, res: ServerResponse) => {
    const message = current.get(`${String(p.chat_id)}:${Number(p.message_id)}`);
    if (!message || message.deleted) {
      const e = { error_code: 400, description: 'Bad Request: message to delete not found' };
      recordDeletion(p, 'failed', e.description);
      return error(res, e);
    }
    message.deleted = true;
    recordDeletion(p, 'deleted');
    return ok(res, true);
  };

  const handleAnswerCallbackQuery = (p: Record<string, unknown>, res: ServerResponse) => {
    const id = String(p.callback_query_id);
    const query = queries.get(id);
    const answer = {
      callback_query_id: id,
      ...(typeof p.text === 'string' ? { text: p.text } : {}),
      at: Date.now(),
    };
    if (!query || query.answered) {
      callbackAnswers.push({ ...answer, outcome: 'failed' });
      return error(res, {
        error_code: 400,
        description: 'Bad Request: query is too old and response timeout expired or query ID is invalid',
      });
    }
    query.answered = true;
    callbackAnswers.push({ ...answer, outcome: 'answered' });
    return ok(res, true);
  };

  const handleEditMessageReplyMarkup = (p: Record<string, unknown>, res: ServerResponse) => {
    const markup = readMarkup(p.reply_markup);
    const record = (outcome: TelegramMarkupEdit['outcome'], problem?: string) =>
      markupEdits.push({
        chat_id: String(p.chat_id),
        message_id: Number(p.message_id),
        ...(markup && markup !== 'invalid' ? { reply_markup: markup } : {}),
        at: Date.now(),
        outcome,
        ...(problem !== undefined ? { error: problem } : {}),
      });
    const refuse = (description: string, outcome: TelegramMarkupEdit['outcome'] = 'failed') => {
      record(outcome, description);
      return error(res, { error_code: 400, description });
    };
    if (markup === 'invalid') return refuse('Bad Request: BUTTON_DATA_INVALID');
    const message = current.get(`${String(p.chat_id)}:${Number(p.message_id)}`);
    if (!message || message.deleted) return refuse('Bad Request: message to edit not found');
    if (sameMarkup(markup, message.reply_markup)) {
      return refuse(
        'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
        'not_modified',
      );
    }
    if (markup) message.reply_markup = markup;
    else delete message.reply_markup;
    record('edited');
    return ok(res, {
      message_id: message.message_id,
      date: now(),
      edit_date: now(),
      chat: chatOf(message.chat_id),
      from: { ...bot, is_bot: true },
      text: message.text,
      ...(markup ? { reply_markup: markup } : {}),
    });
  };

  const pressButton = (press: ButtonPress): DeliveredPress => {
    const chatId = String(press.chatId);
    const message = current.get(`${chatId}:${press.messageId}`);
    const buttons = message?.deleted ? [] : (message?.reply_markup?.inline_keyboard.flat() ?? []);
    if (!message || !buttons.some((b) => b.callback_data === press.data)) {
      throw new Error(
        `fake telegram: message ${press.messageId} in chat ${chatId} shows no button "${press.data}"`,
      );
    }
    const queryId = String(nextQueryId++);
    queries.set(queryId, { answered: false });
    const update = {
      callback_query: {
        id: queryId,
        from: { is_bot: false, first_name: 'User', ...press.from },
        chat_instance: `ci-${chatId}`,
        data: press.data,
        message: {
          message_id: message.message_id,
          date: now(),
          chat: chatOf(chatId),
          from: { ...bot, is_bot: true },
          text: message.text,
          ...(message.thread !== undefined
            ? { message_thread_id: message.thread, is_topic_message: true }
            : {}),
          reply_markup: message.reply_markup,
        },
      },
    };
    const updateId = push(update);
    return { updateId, queryId, update };
  };

  const push = (update: Record<string, unknown>): number => {
    const update_id = typeof update.update_id === 'number' ? update.update_id : nextUpdateId;
    nextUpdateId = Math.max(nextUpdateId, update_id + 1);
    const chat = (update.message as { chat?: { id?: unknown } } | undefined)?.chat;
    if (chat && chat.id !== undefined) chats.set(String(chat.id), chat as Record<string, unknown>);
    updates.push({ ...update, update_id });
    events.emit('update');
    return update_id;
  };

  const failNext = (method: string, replyWith: TelegramErrorReply, times = 1) => {
    const list = failures.get(method) ?? [];
    for (let i = 0; i < times; i++) list.push(replyWith);
    failures.set(method, list);
  };

  const shownMessages = (chatId: string | number): ShownMessage[] =>
    [...current.values()]
      .filter((m) => m.chat_id === String(chatId) && !m.deleted)
      .sort((a, b) => a.message_id - b.message_id)
      .map(({ message_id, text, parse_mode, edits: count, reply_markup }) => ({
        message_id,
        text,
        ...(parse_mode !== undefined ? { parse_mode } : {}),
        edits: count,
        ...(reply_markup ? { reply_markup } : {}),
      }));

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const fileMatch = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
      if (fileMatch) {
        if (fileMatch[1] !== token) return error(res, { error_code: 401, description: 'Unauthorized' });
        const file = [...files.values()].find((f) => f.path === decodeURIComponent(fileMatch[2]!));
        calls.push({ method: 'download', params: { path: fileMatch[2] }, at: Date.now() });
        events.emit('call');
        if (!file) return error(res, { error_code: 404, description: 'Not Found' });
        res.writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-length': file.bytes.length,
        });
        return res.end(Buffer.from(file.bytes));
      }
      const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
      if (!match) return error(res, { error_code: 404, description: 'Not Found' });
      if (match[1] !== token) return error(res, { error_code: 401, description: 'Unauthorized' });
      let params: Record<string, unknown> = Object.fromEntries(url.searchParams);
      const raw = Buffer.concat(chunks);
      const body = raw.toString('utf8');
      const type = req.headers['content-type'] ?? '';
      if (type.startsWith('multipart/form-data')) {
        // A file upload (sendVoice): parsed by the platform's own multipart reader, fields as JSON where they are.
        const method = /^\/bot[^/]+\/([A-Za-z]+)$/.exec(url.pathname)?.[1] ?? '';
        void new Response(raw, { headers: { 'content-type': type } })
          .formData()
          .then((form) => {
            const fields: Record<string, unknown> = {};
            for (const [key, value] of form) {
              if (typeof value !== 'string') fields[key] = value;
              else {
                try {
                  fields[key] = JSON.parse(value);
                } catch {
                  fields[key] = value;
                }
              }
            }
            calls.push({ method, params: fields, at: Date.now() });
            events.emit('call');
            return handleMethod(method, { ...params, ...fields }, res);
          })
          .catch((err: unknown) => {
            if (!res.headersSent) error(res, { error_code: 400, description: `Bad Request: ${String(err)}` });
          })
          .finally(() => events.emit('call'));
        return;
      }
      if (body !== '') {
        try {
          params = { ...params, ...(JSON.parse(body) as Record<string, unknown>) };
        } catch {
          return error(res, { error_code: 400, description: 'Bad Request: body is not JSON' });
        }
      }
      const method = match[2]!;
      calls.push({ method, params, at: Date.now() });
      events.emit('call');
      handleMethod(method, params, res)
        .catch((err: unknown) => {
          if (!res.headersSent) error(res, { error_code: 500, description: String(err) });
        })
        .finally(() => events.emit('call'));
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  return {
    apiRoot: `http://127.0.0.1:${port}`,
    token,
    bot,
    calls,
    pushUpdate: push,
    failNext,
    waitFor(predicate, timeoutMs = 10_000) {
      if (predicate()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate()) return;
          clearTimeout(timer);
          events.off('call', check);
          resolve();
        };
        const timer = setTimeout(() => {
          events.off('call', check);
          reject(new Error(`fake telegram: condition not met within ${timeoutMs} ms`));
        }, timeoutMs);
        events.on('call', check);
      });
    },
    sent: (chatId) => sentMessages.filter((m) => m.chat_id === String(chatId)),
    voices: (chatId) => sentVoices.filter((v) => v.chat_id === String(chatId)),
    edits,
    deletions,
    shown: (chatId) => shownMessages(chatId).map((m) => m.text),
    shownMessages,
    failEdits(times, kind, retryAfterSeconds = 1) {
      const failure: TelegramErrorReply =
        kind === 'rate_limited'
          ? {
              error_code: 429,
              description: `Too Many Requests: retry after ${retryAfterSeconds}`,
              parameters: { retry_after: retryAfterSeconds },
            }
          : { error_code: 400, description: 'Bad Request: message to edit not found' };
      failNext('editMessageText', failure, times);
    },
    addFile(fileId, bytes) {
      files.set(fileId, { bytes, path: `photos/${fileId}.bin` });
    },
    pressButton,
    callbackAnswers,
    markupEdits,
    pendingUpdates: () => updates.length,
    async close() {
      for (const s of sockets) s.destroy();
      server.close();
      await once(server, 'close').catch(() => undefined);
    },
  };
}

function now(): number {
  return Math.floor(Date.now() / 1000);
}

/**
 * A `reply_markup` as Telegram reads it (an object, or its JSON in a form field): an inline
 * keyboard with rows (undefined when absent or without buttons), or `invalid` when a button's
 * `callback_data` is not 1-64 bytes.
 */
function readMarkup(value: unknown): InlineKeyboardMarkup | undefined | 'invalid' {
  const markup = typeof value === 'string' ? (JSON.parse(value) as unknown) : value;
  const rows = (markup as { inline_keyboard?: unknown } | undefined)?.inline_keyboard;
  if (!Array.isArray(rows)) return undefined;
  const buttons = rows.flat() as Array<{ text?: unknown; callback_data?: unknown }>;
  if (buttons.length === 0) return undefined;
  for (const b of buttons) {
    const size = typeof b.callback_data === 'string' ? Buffer.byteLength(b.callback_data) : 0;
    if (typeof b.text !== 'string' || size < 1 || size > 64) return 'invalid';
  }
  return markup as InlineKeyboardMarkup;
}

function sameMarkup(a: InlineKeyboardMarkup | undefined, b: InlineKeyboardMarkup | undefined): boolean {
  return JSON.stringify(a?.inline_keyboard ?? []) === JSON.stringify(b?.inline_keyboard ?? []);
}

/** Length of the text a user sees: tags removed, entities counted as one character. */
function visibleLength(html: string): number {
  return html.replace(/<[^>]+>/g, '').replace(/&(#\d+|#x[0-9a-f]+|[a-z]+);/gi, '_').length;
}

/** Text starting with `@username` and the matching `mention` entity. */
export function mentioning(username: string, text: string): { text: string; entities: unknown[] } {
  return {
    text: `@${username} ${text}`,
    entities: [{ type: 'mention', offset: 0, length: username.length + 1 }],
  };
}

/** A text message update in `chat` from `user` (a fresh message id, sent now). */
function messageUpdate(
  chat: Record<string, unknown>,
  user: { id: number },
  text: string,
  extra: Record<string, unknown>,
): Record<string, unknown> {
  return {
    message: {
      message_id: randomInt(1, 2 ** 31),
      date: now(),
      chat,
      from: { is_bot: false, first_name: 'User', ...user },
      text,
      ...extra,
    },
  };
}

/** A private-chat text message update from `user`. */
export function dmUpdate(
  user: { id: number; first_name?: string; username?: string },
  text: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return messageUpdate(
    { id: user.id, type: 'private', first_name: user.first_name ?? 'User' },
    user,
    text,
    extra,
  );
}

/** A group (supergroup) message update from `user`. */
export function groupUpdate(
  chatId: number,
  user: { id: number; first_name?: string; last_name?: string; username?: string },
  text: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return messageUpdate({ id: chatId, type: 'supergroup', title: 'Group' }, user, text, extra);
}
