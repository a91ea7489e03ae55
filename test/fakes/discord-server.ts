/**
 * A fake Discord: REST (node:http, under /api/v10) and a gateway (`ws`) on 127.0.0.1,
 * enough for the real discord.js client to log in, receive MESSAGE_CREATE and send
 * messages and typing. Messages can be edited (PATCH) and deleted (DELETE) as on
 * Discord (10008 Unknown Message for one that is gone, 2000-character limit);
 * edits and deletions are recorded and `shown` gives what a channel finally
 * displays. Records every REST call; errors (429, 403, 10008…) on demand.
 *
 * Buttons: a message's `components` are kept (posted, edited); `pressButton`
 * dispatches the INTERACTION_CREATE (type 3, a button) a user's click on a
 * shown button makes, and `POST /interactions/:id/:token/callback` (no bot
 * token, as on Discord) answers it once: UPDATE_MESSAGE (7) changes the
 * message, DEFERRED_UPDATE_MESSAGE (6) changes nothing; a second answer is
 * 40060, an unknown interaction 10062.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

/** One REST call as the fake saw it. */
export interface FakeDiscordCall {
  method: string;
  /** Path after /api/v10, e.g. `/channels/123/messages`. */
  path: string;
  /** The route with ids replaced, e.g. `POST /channels/:id/messages`. */
  route: string;
  body: unknown;
  status: number;
  at: number;
}

/** A message component row as Discord keeps it (buttons: type 2 with `label` and `custom_id`). */
export interface FakeActionRow {
  type: number;
  components: Array<{ type: number; style?: number; label?: string; custom_id?: string }>;
}

/** A message the bot posted. */
export interface FakeSentMessage {
  id: string;
  channelId: string;
  content: string;
  nonce?: string;
  messageReference?: { message_id: string };
  /** The components it was posted with. */
  components?: FakeActionRow[];
}

/** A user's click on a button of a message the bot posted. */
export interface FakeButtonPress {
  channelId: string;
  messageId: string;
  /** The clicked button's `custom_id`: it must be on the message now (a user clicks what they see). */
  customId: string;
  user: FakeUser;
  /** Server nickname (guild channels). */
  nick?: string;
}

/** One answer to an interaction (`POST /interactions/:id/:token/callback`). */
export interface FakeInteractionCallback {
  interactionId: string;
  /** 6 DEFERRED_UPDATE_MESSAGE, 7 UPDATE_MESSAGE, 4 CHANNEL_MESSAGE_WITH_SOURCE… */
  type: number;
  data?: Record<string, unknown>;
  at: number;
  /** `answered`; `failed`: unknown interaction or answered already (see `status`). */
  outcome: 'answered' | 'failed';
  status: number;
}

/** One PATCH of a posted message, whatever its outcome. */
export interface FakeDiscordEdit {
  channelId: string;
  messageId: string;
  content: string;
  at: number;
  /** `edited`: the message now shows `content`; `failed`: refused (see `status`). */
  outcome: 'edited' | 'failed';
  status: number;
}

/** One DELETE of a message. */
export interface FakeDiscordDeletion {
  channelId: string;
  messageId: string;
  at: number;
  outcome: 'deleted' | 'failed';
  status: number;
}

/** A message as its channel shows it now (after edits). */
export interface FakeShownMessage {
  id: string;
  content: string;
  /** Successful edits it went through. */
  edits: number;
  /** Its components now (absent: none). */
  components?: FakeActionRow[];
}

export interface FakeUser {
  id: string;
  username: string;
  global_name?: string | null;
  bot?: boolean;
}

export interface FakeAttachment {
  id: string;
  filename: string;
  size: number;
  url: string;
  proxy_url: string;
  content_type?: string;
}

/** What a test says about an incoming message; the fake fills in the rest. */
export interface FakeMessageInput {
  channelId: string;
  author: FakeUser;
  content: string;
  /** Guild messages: the guild (defaults to none = a DM). */
  guildId?: string;
  /** Server nickname of the author. */
  nick?: string;
  mentions?: FakeUser[];
  attachments?: FakeAttachment[];
  /** The message this one replies to (its author decides "replied to the bot"). */
  referencedMessage?: { id: string; author: FakeUser; content?: string };
  /** The message's id: give an earlier one to deliver that message again, as a gateway replaying events does. */
  id?: string;
}

export interface FailureSpec {
  status: number;
  body?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** A voice message posted (flags IS_VOICE_MESSAGE, one OGG attachment), as Discord would check it. */
export interface FakeVoiceMessage {
  id: string;
  channelId: string;
  flags: number;
  /** The attachment's metadata from payload_json. */
  attachment: { id: unknown; filename?: string; duration_secs?: number; waveform?: string };
  /** The uploaded file. */
  file: { name: string; type: string; bytes: Buffer };
  messageReference?: { message_id: string };
}

/** The flag of a voice message (1 << 13). */
export const IS_VOICE_MESSAGE = 1 << 13;

export interface FakeDiscord {
  /** For `DISCORD_API_ROOT` / discord.js `rest.api`: `http://127.0.0.1:PORT/api`. */
  apiRoot: string;
  botUserId: string;
  botUsername: string;
  guildId: string;
  /** A text channel in the test guild. */
  textChannelId: string;
  /** A public thread under {@link FakeDiscord.textChannelId}. */
  threadId: string;
  calls: FakeDiscordCall[];
  /** Voice messages posted (multipart with payload_json), in order. */
  voiceMessages: FakeVoiceMessage[];
  /** A fresh snowflake id (for DM channels and users in tests). */
  newId(): string;
  /** Number of IDENTIFY payloads received (logins). */
  identifies(): number;
  /** Sends MESSAGE_CREATE to every ready gateway session; returns the message id. */
  dispatchMessage(input: FakeMessageInput): string;
  /** Messages the bot posted to a channel, in order (as posted; edits do not change them). */
  sent(channelId: string): FakeSentMessage[];
  /** Every PATCH of a message, in order (refused ones too; see `outcome`). */
  edits: FakeDiscordEdit[];
  /** Every DELETE of a message, in order. */
  deletions: FakeDiscordDeletion[];
  /** The contents a channel shows now: the bot's not-deleted messages in order, each with its latest edit. */
  shown(channelId: string): string[];
  /** Like {@link FakeDiscord.shown} with ids and edit counts. */
  shownMessages(channelId: string): FakeShownMessage[];
  /** The next request matching `route` (e.g. `POST /channels/:id/messages`) fails with this. */
  failNext(route: string, failure: FailureSpec): void;
  /**
   * The next `times` message edits (PATCH) fail: `unknown_message` with 404 / 10008,
   * `rate_limited` with a 429 (retry_after in body and headers, default 0.05 s: the
   * discord.js REST client waits it out and retries, unless built with rejectOnRateLimit).
   */
  failEdits(times: number, kind: 'unknown_message' | 'rate_limited', retryAfterSeconds?: number): void;
  /**
   * A user clicks a button: dispatches INTERACTION_CREATE (type 3, component type 2) on every
   * ready gateway session; returns the interaction's id. Throws when the message does not show a
   * button with that `custom_id` now.
   */
  pressButton(press: FakeButtonPress): string;
  /** Dispatches an interaction again, unchanged (a gateway replaying events). */
  replayInteraction(id: string): void;
  /** Every interaction answer, in order. */
  interactionCallbacks: FakeInteractionCallback[];
  /** Serves bytes as an attachment; returns the payload object for `attachments`. */
  addAttachment(filename: string, contentType: string, bytes: Buffer): FakeAttachment;
  /** Resolves when `predicate()` is true (checked on every event and every 20 ms), or rejects after `timeoutMs`. */
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  /** Closes every gateway connection with a resumable code (the client reconnects). */
  dropConnections(): void;
  close(): Promise<void>;
}

const EPOCH = 1420070400000n;

/** Starts the fake on a free 127.0.0.1 port. */
export async function startFakeDiscord(options: {
  token: string;
  botUsername?: string;
}): Promise<FakeDiscord> {
  let counter = 0n;
  const snowflake = () => (((BigInt(Date.now()) - EPOCH) << 22n) | (counter++ & 0x3fffffn)).toString();
  const botUsername = options.botUsername ?? 'magpie_bot';
  const bot = {
    id: snowflake(),
    username: botUsername,
    discriminator: '0',
    global_name: null,
    avatar: null,
    bot: true,
  };
  const guildId = snowflake();
  const textChannelId = snowflake();
  const threadId = snowflake();
  const calls: FakeDiscordCall[] = [];
  const sentMessages: FakeSentMessage[] = [];
  const voiceMessages: FakeVoiceMessage[] = [];
  const failures = new Map<string, FailureSpec[]>();
  const files = new Map<string, { contentType: string; bytes: Buffer }>();
  const dmChannels = new Set<string>();
  const byNonce = new Map<string, FakeSentMessage>();
  /** Current state of every posted message, by id (insertion order is posting order). */
  const current = new Map<string, FakeShownMessage & { channelId: string; deleted: boolean }>();
  /** Dispatched interactions: their token, payload and whether they were answered. */
  const interactions = new Map<string, { token: string; payload: unknown; answered: boolean }>();
  const interactionCallbacks: FakeInteractionCallback[] = [];
  const edits: FakeDiscordEdit[] = [];
  const deletions: FakeDiscordDeletion[] = [];
  const sessions = new Set<{ socket: WebSocket; seq: number; ready: boolean }>();
  let identifyCount = 0;
  const waiters = new Set<() => void>();
  const notify = () => {
    for (const w of waiters) w();
  };

  const http = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: String(err), code: 0 }));
    });
  });
  const wss = new WebSocketServer({ server: http });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;

  function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  }

  async function readBody(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const type = req.headers['content-type'] ?? '';
    if (type.startsWith('multipart/form-data')) {
      // An upload: payload_json holds the JSON body, files[n] the files (Discord's multipart form).
      const form = await new Response(Buffer.concat(chunks), {
        headers: { 'content-type': type },
      }).formData();
      const payload = form.get('payload_json');
      const files: Array<{ field: string; name: string; type: string; bytes: Buffer }> = [];
      for (const [field, value] of form) {
        if (typeof value !== 'string')
          files.push({
            field,
            name: value.name,
            type: value.type,
            bytes: Buffer.from(await value.arrayBuffer()),
          });
      }
      return { ...(typeof payload === 'string' ? (JSON.parse(payload) as object) : {}), __files: files };
    }
    const text = Buffer.concat(chunks).toString('utf8');
    if (text === '') return undefined;
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }

  /** A voice message: no content, one audio/ogg file, its attachment with duration_secs and a base64 waveform. */
  function postVoiceMessage(
    res: ServerResponse,
    channelId: string,
    b: Record<string, unknown>,
    record: (status: number) => void,
  ) {
    const files = (b['__files'] ?? []) as FakeVoiceMessage['file'][];
    const attachments = (b['attachments'] ?? []) as FakeVoiceMessage['attachment'][];
    const attachment = attachments[0];
    const refuse = (message: string) => {
      record(400);
      json(res, 400, { message, code: 50_161 });
    };
    if (typeof b['content'] === 'string' && b['content'] !== '')
      return refuse('Voice messages cannot have content');
    if (files.length !== 1 || attachments.length !== 1 || !attachment)
      return refuse('Voice messages need one file');
    if (typeof attachment.duration_secs !== 'number' || typeof attachment.waveform !== 'string')
      return refuse('Voice messages need duration_secs and waveform');
    const message: FakeVoiceMessage = {
      id: snowflake(),
      channelId,
      flags: Number(b['flags']),
      attachment,
      file: files[0]!,
      ...(b['message_reference']
        ? { messageReference: b['message_reference'] as { message_id: string } }
        : {}),
    };
    voiceMessages.push(message);
    record(200);
    json(res, 200, messagePayload(message.id, channelId, bot, '', undefined));
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', base);
    if (req.method === 'GET' && url.pathname.startsWith('/attachments/')) {
      const file = files.get(url.pathname);
      calls.push({
        method: 'GET',
        path: url.pathname,
        route: 'GET /attachments',
        body: undefined,
        status: file ? 200 : 404,
        at: Date.now(),
      });
      notify();
      if (!file) return json(res, 404, { message: 'Not Found', code: 0 });
      res.writeHead(200, { 'content-type': file.contentType, 'content-length': String(file.bytes.length) });
      res.end(file.bytes);
      return;
    }
    if (!url.pathname.startsWith('/api/v10/')) return json(res, 404, { message: '404: Not Found', code: 0 });
    const path = url.pathname.slice('/api/v10'.length);
    const method = req.method ?? 'GET';
    const route = `${method} ${path.replace(/\/\d{5,}/g, '/:id').replace(/^(\/interactions\/:id\/)[^/]+/, '$1:token')}`;
    const body = await readBody(req);
    const record = (status: number) => {
      calls.push({ method, path, route, body, status, at: Date.now() });
      notify();
    };
    const callback = /^\/interactions\/(\d+)\/([^/]+)\/callback$/.exec(path);
    // Interaction answers carry the interaction's token, not the bot's.
    if (callback && method === 'POST')
      return answerInteraction(res, callback[1]!, callback[2]!, body, record);
    if (req.headers.authorization !== `Bot ${options.token}`) {
      record(401);
      return json(res, 401, { message: '401: Unauthorized', code: 0 });
    }
    const failure = failures.get(route)?.shift();
    if (failure) {
      record(failure.status);
      recordChange(method, path, body, 'failed', failure.status);
      const retryAfter = Number(failure.body?.['retry_after'] ?? 0.2);
      const headers =
        failure.status === 429
          ? {
              'retry-after': String(retryAfter),
              'x-ratelimit-limit': '5',
              'x-ratelimit-remaining': '0',
              'x-ratelimit-reset-after': String(retryAfter),
              'x-ratelimit-bucket': 'fake-bucket',
              'x-ratelimit-scope': 'user',
              ...failure.headers,
            }
          : (failure.headers ?? {});
      const payload =
        failure.body ??
        (failure.status === 429
          ? { message: 'You are being rate limited.', retry_after: retryAfter, global: false }
          : {});
      return json(res, failure.status, payload, headers);
    }

    if (method === 'GET' && path === '/gateway/bot') {
      record(200);
      return json(res, 200, {
        url: `ws://127.0.0.1:${port}`,
        shards: 1,
        session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 },
      });
    }
    if (method === 'GET' && path === '/users/@me') {
      record(200);
      return json(res, 200, bot);
    }
    let match = /^\/channels\/(\d+)\/typing$/.exec(path);
    if (match && method === 'POST') {
      record(204);
      res.writeHead(204);
      res.end();
      return;
    }
    match = /^\/channels\/(\d+)\/messages$/.exec(path);
    const voiceBody = body as { flags?: number; __files?: FakeVoiceMessage['file'][] } | undefined;
    if (match && method === 'POST' && ((voiceBody?.flags ?? 0) & IS_VOICE_MESSAGE) !== 0) {
      return postVoiceMessage(res, match[1]!, body as Record<string, unknown>, record);
    }
    if (match && method === 'POST') {
      const channelId = match[1]!;
      const b = (body ?? {}) as {
        content?: string;
        nonce?: string;
        enforce_nonce?: boolean;
        message_reference?: { message_id: string };
        components?: FakeActionRow[];
      };
      const components = b.components && b.components.length > 0 ? b.components : undefined;
      const existing = b.enforce_nonce && b.nonce ? byNonce.get(`${channelId}:${b.nonce}`) : undefined;
      if (!existing && (b.content ?? '').length > 2000) {
        record(400);
        return json(res, 400, tooLong());
      }
      const message = existing ?? {
        id: snowflake(),
        channelId,
        content: b.content ?? '',
        ...(b.nonce ? { nonce: b.nonce } : {}),
        ...(b.message_reference ? { messageReference: b.message_reference } : {}),
        ...(components ? { components } : {}),
      };
      if (!existing) {
        sentMessages.push(message);
        current.set(message.id, {
          id: message.id,
          channelId,
          content: message.content,
          edits: 0,
          deleted: false,
          ...(components ? { components } : {}),
        });
        if (b.nonce) byNonce.set(`${channelId}:${b.nonce}`, message);
      }
      record(200);
      return json(res, 200, messagePayload(message.id, channelId, bot, message.content, message.components));
    }
    match = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path);
    if (match && (method === 'PATCH' || method === 'DELETE')) {
      const message = current.get(match[2]!);
      if (!message || message.channelId !== match[1] || message.deleted) {
        record(404);
        recordChange(method, path, body, 'failed', 404);
        return json(res, 404, { message: 'Unknown Message', code: 10008 });
      }
      if (method === 'DELETE') {
        message.deleted = true;
        record(204);
        recordChange(method, path, body, 'deleted', 204);
        res.writeHead(204);
        res.end();
        return;
      }
      const content = (body as { content?: unknown } | undefined)?.content;
      if (content !== undefined) {
        const problem =
          typeof content !== 'string' || content.length > 2000
            ? tooLong()
            : content.trim() === ''
              ? { message: 'Cannot send an empty message', code: 50006 }
              : undefined;
        if (problem) {
          record(400);
          recordChange(method, path, body, 'failed', 400);
          return json(res, 400, problem);
        }
        message.content = content as string;
        message.edits++;
      }
      setComponents(message, body);
      record(200);
      recordChange(method, path, body, 'edited', 200);
      return json(res, 200, {
        ...messagePayload(message.id, message.channelId, bot, message.content, message.components),
        edited_timestamp: new Date().toISOString(),
      });
    }
    match = /^\/channels\/(\d+)$/.exec(path);
    if (match && method === 'GET') {
      const id = match[1]!;
      record(200);
      if (id === textChannelId) return json(res, 200, { id, type: 0, guild_id: guildId, name: 'general' });
      if (id === threadId) return json(res, 200, threadPayload());
      return json(res, 200, { id, type: 1, recipients: [], last_message_id: null });
    }
    record(404);
    return json(res, 404, { message: 'Unknown route', code: 0 });
  }

  /** Applies an edit's `components` (absent: unchanged; an empty list: none). */
  function setComponents(message: FakeShownMessage, body: unknown) {
    const components = (body as { components?: FakeActionRow[] } | undefined)?.components;
    if (components === undefined) return;
    if (components.length > 0) message.components = components;
    else delete message.components;
  }

  /** `POST /interactions/:id/:token/callback`: the one answer an interaction takes. */
  function answerInteraction(
    res: ServerResponse,
    id: string,
    token: string,
    body: unknown,
    record: (status: number) => void,
  ) {
    const b = (body ?? {}) as { type?: number; data?: Record<string, unknown> };
    const interaction = interactions.get(id);
    const answer = (status: number, outcome: 'answered' | 'failed') => {
      interactionCallbacks.push({
        interactionId: id,
        type: Number(b.type),
        ...(b.data ? { data: b.data } : {}),
        at: Date.now(),
        outcome,
        status,
      });
      record(status);
    };
    if (!interaction || interaction.token !== token) {
      answer(404, 'failed');
      return json(res, 404, { message: 'Unknown interaction', code: 10062 });
    }
    if (interaction.answered) {
      answer(400, 'failed');
      return json(res, 400, { message: 'Interaction has already been acknowledged.', code: 40060 });
    }
    interaction.answered = true;
    const messageId = (interaction.payload as { message: { id: string } }).message.id;
    const message = current.get(messageId);
    if (b.type === 7 && message && !message.deleted) {
      if (typeof b.data?.['content'] === 'string') {
        message.content = b.data['content'];
        message.edits++;
      }
      setComponents(message, b.data);
    }
    answer(204, 'answered');
    res.writeHead(204);
    res.end();
  }

  function failNext(route: string, failure: FailureSpec) {
    const list = failures.get(route) ?? [];
    list.push(failure);
    failures.set(route, list);
  }

  /** Records a PATCH or DELETE of a message (anything else is ignored). */
  function recordChange(
    method: string,
    path: string,
    body: unknown,
    outcome: 'edited' | 'deleted' | 'failed',
    status: number,
  ) {
    const match = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path);
    if (!match) return;
    const [channelId, messageId] = [match[1]!, match[2]!];
    if (method === 'PATCH') {
      const content = (body as { content?: unknown } | undefined)?.content;
      edits.push({
        channelId,
        messageId,
        content: typeof content === 'string' ? content : '',
        at: Date.now(),
        outcome: outcome === 'failed' ? 'failed' : 'edited',
        status,
      });
    } else if (method === 'DELETE') {
      deletions.push({
        channelId,
        messageId,
        at: Date.now(),
        outcome: outcome === 'failed' ? 'failed' : 'deleted',
        status,
      });
    }
  }

  function tooLong() {
    return {
      message: 'Invalid Form Body',
      code: 50035,
      errors: {
        content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }] },
      },
    };
  }

  function shownMessages(channelId: string): FakeShownMessage[] {
    return [...current.values()]
      .filter((m) => m.channelId === channelId && !m.deleted)
      .map(({ id, content, edits: count, components }) => ({
        id,
        content,
        edits: count,
        ...(components ? { components } : {}),
      }));
  }

  function messagePayload(
    id: string,
    channelId: string,
    author: object,
    content: string,
    components: FakeActionRow[] = [],
  ) {
    return {
      id,
      channel_id: channelId,
      author,
      content,
      components,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      attachments: [],
      embeds: [],
      pinned: false,
      type: 0,
    };
  }

  function threadPayload() {
    return {
      id: threadId,
      type: 11,
      guild_id: guildId,
      parent_id: textChannelId,
      name: 'a thread',
      owner_id: bot.id,
      thread_metadata: {
        archived: false,
        auto_archive_duration: 1440,
        archive_timestamp: new Date().toISOString(),
        locked: false,
      },
    };
  }

  const user = (u: FakeUser) => ({
    id: u.id,
    username: u.username,
    discriminator: '0',
    global_name: u.global_name ?? null,
    avatar: null,
    ...(u.bot ? { bot: true } : {}),
  });

  function send(session: { socket: WebSocket; seq: number }, op: number, d: unknown, t?: string) {
    const payload = t ? { op, d, s: ++session.seq, t } : { op, d, s: null, t: null };
    session.socket.send(JSON.stringify(payload));
  }

  /** Sends a dispatch event to every ready gateway session. */
  function dispatch(d: unknown, event: string) {
    const ready = [...sessions].filter((s) => s.ready);
    if (ready.length === 0) throw new Error('fake discord: no ready gateway session to dispatch to');
    for (const s of ready) send(s, 0, d, event);
  }

  wss.on('connection', (socket) => {
    const session = { socket, seq: 0, ready: false };
    sessions.add(session);
    socket.on('close', () => sessions.delete(session));
    send(session, 10, { heartbeat_interval: 30_000 });
    socket.on('message', (raw) => {
      const packet = JSON.parse(String(raw)) as { op: number; d: Record<string, unknown> | null };
      if (packet.op === 1) send(session, 11, null);
      else if (packet.op === 2) {
        if (packet.d?.['token'] !== options.token) {
          socket.close(4004, 'Authentication failed.');
          return;
        }
        identifyCount++;
        send(
          session,
          0,
          {
            v: 10,
            user: bot,
            guilds: [{ id: guildId, unavailable: true }],
            session_id: randomUUID(),
            resume_gateway_url: `ws://127.0.0.1:${port}`,
            application: { id: bot.id, flags: 0 },
          },
          'READY',
        );
        send(
          session,
          0,
          {
            id: guildId,
            name: 'Test guild',
            owner_id: '1',
            unavailable: false,
            member_count: 2,
            roles: [{ id: guildId, name: '@everyone', permissions: '68608', position: 0, color: 0 }],
            channels: [{ id: textChannelId, type: 0, guild_id: guildId, name: 'general', position: 0 }],
            threads: [threadPayload()],
            members: [],
            emojis: [],
            stickers: [],
            features: [],
            joined_at: new Date().toISOString(),
          },
          'GUILD_CREATE',
        );
        session.ready = true;
        notify();
      } else if (packet.op === 6) {
        send(session, 0, {}, 'RESUMED');
        session.ready = true;
        notify();
      }
    });
  });

  return {
    apiRoot: `${base}/api`,
    botUserId: bot.id,
    botUsername,
    guildId,
    textChannelId,
    threadId,
    calls,
    voiceMessages,
    newId: snowflake,
    identifies: () => identifyCount,
    dispatchMessage(input) {
      const id = input.id ?? snowflake();
      const dm = input.guildId === undefined;
      if (dm) dmChannels.add(input.channelId);
      const d: Record<string, unknown> = {
        ...messagePayload(id, input.channelId, user(input.author), input.content),
        mentions: (input.mentions ?? []).map(user),
        attachments: input.attachments ?? [],
      };
      if (dm) d['channel_type'] = 1;
      else {
        d['guild_id'] = input.guildId;
        d['channel_type'] = input.channelId === threadId ? 11 : 0;
        d['member'] = {
          nick: input.nick ?? null,
          roles: [],
          joined_at: new Date().toISOString(),
          deaf: false,
          mute: false,
        };
      }
      if (input.referencedMessage) {
        const ref = input.referencedMessage;
        d['type'] = 19;
        d['message_reference'] = { message_id: ref.id, channel_id: input.channelId, guild_id: input.guildId };
        d['referenced_message'] = messagePayload(
          ref.id,
          input.channelId,
          user(ref.author),
          ref.content ?? '',
        );
      }
      dispatch(d, 'MESSAGE_CREATE');
      return id;
    },
    pressButton(press) {
      const message = current.get(press.messageId);
      const buttons = message?.deleted ? [] : (message?.components ?? []).flatMap((row) => row.components);
      if (
        !message ||
        message.channelId !== press.channelId ||
        !buttons.some((b) => b.custom_id === press.customId)
      ) {
        throw new Error(`fake discord: message ${press.messageId} shows no button "${press.customId}"`);
      }
      const guild = press.channelId === textChannelId || press.channelId === threadId;
      const id = snowflake();
      const presser = user(press.user);
      const channel = guild
        ? press.channelId === threadId
          ? threadPayload()
          : { id: textChannelId, type: 0, guild_id: guildId, name: 'general', position: 0 }
        : { id: press.channelId, type: 1, recipients: [presser] };
      const payload = {
        id,
        application_id: bot.id,
        type: 3,
        token: `interaction-token-${randomUUID()}`,
        version: 1,
        data: { custom_id: press.customId, component_type: 2 },
        channel_id: press.channelId,
        channel,
        ...(guild
          ? {
              guild_id: guildId,
              guild_locale: 'en-US',
              member: {
                user: presser,
                nick: press.nick ?? null,
                roles: [],
                joined_at: new Date().toISOString(),
                deaf: false,
                mute: false,
                flags: 0,
                permissions: '0',
              },
            }
          : { user: presser }),
        message: messagePayload(message.id, message.channelId, bot, message.content, message.components),
        app_permissions: '0',
        locale: 'en-US',
        entitlements: [],
        authorizing_integration_owners: guild ? { '0': guildId } : { '1': press.user.id },
        context: guild ? 0 : 1,
      };
      interactions.set(id, { token: payload.token, payload, answered: false });
      dispatch(payload, 'INTERACTION_CREATE');
      return id;
    },
    replayInteraction(id) {
      const interaction = interactions.get(id);
      if (!interaction) throw new Error(`fake discord: no interaction ${id} to replay`);
      dispatch(interaction.payload, 'INTERACTION_CREATE');
    },
    interactionCallbacks,
    sent: (channelId) => sentMessages.filter((m) => m.channelId === channelId),
    edits,
    deletions,
    shown: (channelId) => shownMessages(channelId).map((m) => m.content),
    shownMessages,
    failNext,
    failEdits(times, kind, retryAfterSeconds = 0.05) {
      const failure: FailureSpec =
        kind === 'rate_limited'
          ? {
              status: 429,
              body: { message: 'You are being rate limited.', retry_after: retryAfterSeconds, global: false },
            }
          : { status: 404, body: { message: 'Unknown Message', code: 10008 } };
      for (let i = 0; i < times; i++) failNext('PATCH /channels/:id/messages/:id', failure);
    },
    addAttachment(filename, contentType, bytes) {
      const id = snowflake();
      const path = `/attachments/${id}/${encodeURIComponent(filename)}`;
      files.set(path, { contentType, bytes });
      return {
        id,
        filename,
        size: bytes.length,
        url: `${base}${path}`,
        proxy_url: `${base}${path}`,
        content_type: contentType,
      };
    },
    waitFor(predicate, timeoutMs = 10_000) {
      if (predicate()) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!predicate()) return;
          cleanup();
          resolve();
        };
        const interval = setInterval(check, 20);
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`fake discord: condition not met within ${timeoutMs} ms`));
        }, timeoutMs);
        const cleanup = () => {
          clearInterval(interval);
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
      });
    },
    dropConnections() {
      for (const s of sessions) {
        s.ready = false;
        s.socket.close(4000, 'Unknown error');
      }
    },
    async close() {
      for (const s of sessions) s.socket.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
