/**
 * A fake Slack on 127.0.0.1: the Web API methods magpie's Slack channel uses
 * (`POST /api/<method>`, form-encoded or JSON, `Authorization: Bearer`) and
 * a Socket Mode WebSocket (`ws`) whose URL `apps.connections.open` hands out
 * to the app token. A connection gets `hello`; `deliverEvent` sends an
 * `events_api` envelope (`envelope_id`, `payload.event`, `retry_attempt`,
 * `retry_reason`, `accepts_response_payload`), `pressButton` an `interactive`
 * one (`block_actions`); acks are recorded per envelope, and an envelope can
 * be delivered again (a Slack retry) with `redeliver`. Messages the bot posts
 * are kept with their edits (`chat.update`) and deletions; `shown` gives what
 * a conversation finally displays (blocks' text when there are blocks). Any
 * method can be made to fail next (429 with Retry-After, a Slack error).
 * Files are served at `/files/<id>` to the bot token only.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

/** One Web API call as the fake saw it. */
export interface FakeSlackCall {
  method: string;
  args: Record<string, unknown>;
  status: number;
  at: number;
}

/** A Block Kit block as kept (only what the fake reads). */
export interface FakeSlackBlock {
  type: string;
  text?: { type: string; text: string };
  elements?: Array<{ type: string; action_id?: string; value?: string; text?: { text: string } }>;
}

/** A message the bot posted, as it is now. */
export interface FakeSlackMessage {
  channel: string;
  ts: string;
  /** The root's ts when it is in a thread. */
  threadTs?: string;
  text: string;
  blocks?: FakeSlackBlock[];
  /** Successful chat.update calls it went through. */
  edits: number;
  deleted: boolean;
}

/** One chat.update, whatever its outcome. */
export interface FakeSlackEdit {
  channel: string;
  ts: string;
  text: string;
  at: number;
  outcome: 'edited' | 'failed';
  status: number;
}

/** A message a user writes; the fake fills in ts, event id and the envelope. */
export interface FakeSlackUserMessage {
  channel: string;
  user: string;
  text: string;
  /** `im` for a DM, `channel` for a public channel. @defaultValue from the id: D… is `im` */
  channelType?: 'im' | 'channel' | 'group' | 'mpim';
  threadTs?: string;
  files?: FakeSlackFile[];
  /** The user who started the thread (Slack sets it on thread replies). */
  parentUserId?: string;
}

export interface FakeSlackFile {
  id: string;
  name: string;
  mimetype: string;
  size: number;
  url_private: string;
  url_private_download: string;
}

export interface FakeSlackUser {
  id: string;
  name: string;
  realName?: string;
}

export interface FakeSlackFailure {
  status: number;
  /** Seconds (429). @defaultValue 1 */
  retryAfter?: number;
  /** Slack's `error` for an `ok: false` answer (status 200). */
  error?: string;
}

/** An envelope the fake sent and whether the app acknowledged it. */
export interface FakeEnvelope {
  envelopeId: string;
  type: 'events_api' | 'interactive';
  payload: Record<string, unknown>;
  retryAttempt: number;
  acked: boolean;
}

/** A file the bot shared with files.uploadV2 (getUploadURLExternal, the upload, completeUploadExternal). */
export interface FakeSlackUpload {
  id: string;
  filename: string;
  /** The `length` the bot announced. */
  length: number;
  title: string | undefined;
  /** Where it was shared (completeUploadExternal); undefined until then. */
  channel: string | undefined;
  threadTs: string | undefined;
  bytes: Buffer;
  completed: boolean;
}

export interface FakeSlack {
  /** For SLACK_API_ROOT: `http://127.0.0.1:PORT/api/`. */
  apiRoot: string;
  botUserId: string;
  calls: FakeSlackCall[];
  edits: FakeSlackEdit[];
  envelopes: FakeEnvelope[];
  /** A fresh id with Slack's prefix (`U` user, `D` DM, `C` channel, `F` file). */
  newId(prefix: 'U' | 'D' | 'C' | 'F'): string;
  /** Makes a user users.info knows. */
  addUser(user: FakeSlackUser): void;
  /** A user message Slack has but did not deliver (a thread root written before); returns its ts. */
  addUserMessage(channel: string, user: string, text: string): string;
  /** A user writes: sends the `message` event to the open Socket Mode connection. Returns its ts and ids. */
  deliverMessage(message: FakeSlackUserMessage): { ts: string; eventId: string; envelopeId: string };
  /** Sends an envelope again as Slack retries it (new envelope id, `retry_attempt` + 1). Returns the new envelope id. */
  redeliver(envelopeId: string, reason?: string): string;
  /** Acks of the next `n` envelopes are lost (not recorded: the envelope stays unacknowledged). */
  loseAcks(n: number): void;
  /** A user clicks a button on a shown message; returns the envelope id. */
  pressButton(press: { channel: string; ts: string; actionId: string; user: FakeSlackUser }): string;
  /** The bot's messages in a conversation (a thread when `threadTs`; else every message of the channel), not deleted, in order. */
  messages(channel: string, threadTs?: string): FakeSlackMessage[];
  /** What those messages show: their blocks' text when they have blocks, else their text (mrkdwn). */
  shown(channel: string, threadTs?: string): string[];
  /** Reactions on a message now (names). */
  reactions(channel: string, ts: string): string[];
  /** Files the bot uploaded (files.uploadV2), in order. */
  uploads: FakeSlackUpload[];
  /** The next call of `method` fails with this. */
  failNext(method: string, failure: FakeSlackFailure): void;
  /** Serves bytes as a file shared in Slack (bot token needed); returns the event's `files` entry. */
  addFile(name: string, mimetype: string, bytes: Buffer): FakeSlackFile;
  /** Number of open Socket Mode connections that got `hello`. */
  connections(): number;
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Starts the fake on a free 127.0.0.1 port. */
export async function startFakeSlack(options: { botToken: string; appToken: string }): Promise<FakeSlack> {
  let counter = 0;
  let clock = Math.floor(Date.now() / 1000);
  const nextTs = () => `${clock++}.${String(++counter).padStart(6, '0')}`;
  const newId = (prefix: string) => `${prefix}${(100000 + ++counter).toString(36).toUpperCase()}X${counter}`;
  const botUserId = newId('U');
  const calls: FakeSlackCall[] = [];
  const edits: FakeSlackEdit[] = [];
  const envelopes: FakeEnvelope[] = [];
  const messages: FakeSlackMessage[] = [];
  const userMessages = new Map<string, { channel: string; ts: string; user: string; text: string }>();
  const users = new Map<string, FakeSlackUser>();
  const reactions = new Map<string, Set<string>>();
  const failures = new Map<string, FakeSlackFailure[]>();
  const files = new Map<string, { mimetype: string; bytes: Buffer }>();
  const uploads: FakeSlackUpload[] = [];
  const sockets = new Set<WebSocket>();
  let acksToLose = 0;
  const waiters = new Set<() => void>();
  const notify = () => {
    for (const w of waiters) w();
  };

  const http = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => json(res, 500, { ok: false, error: String(err) }));
  });
  const wss = new WebSocketServer({ server: http, path: '/link/' });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;

  function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  }

  async function readArgs(req: IncomingMessage): Promise<Record<string, unknown>> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    if (text === '') return {};
    if ((req.headers['content-type'] ?? '').includes('application/json')) return JSON.parse(text);
    const args: Record<string, unknown> = {};
    for (const [key, value] of new URLSearchParams(text)) {
      // The SDK sends objects (blocks) as JSON strings in form bodies.
      args[key] = /^[[{]/.test(value) ? JSON.parse(value) : value;
    }
    return args;
  }

  const find = (channel: unknown, ts: unknown) =>
    messages.find((m) => m.channel === channel && m.ts === ts && !m.deleted);

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', base);
    if (req.method === 'GET' && url.pathname.startsWith('/files/')) {
      const file = files.get(url.pathname);
      const authorized = req.headers.authorization === `Bearer ${options.botToken}`;
      calls.push({
        method: 'GET /files',
        args: { path: url.pathname, authorized },
        status: 0,
        at: Date.now(),
      });
      notify();
      if (!file || !authorized) return json(res, file ? 403 : 404, { ok: false });
      res.writeHead(200, { 'content-type': file.mimetype, 'content-length': String(file.bytes.length) });
      res.end(file.bytes);
      return;
    }
    if (req.method === 'POST' && url.pathname.startsWith('/upload/v1/')) return receiveUpload(req, res, url);
    if (!url.pathname.startsWith('/api/')) return json(res, 404, { ok: false });
    const method = url.pathname.slice('/api/'.length);
    const args = await readArgs(req);
    const record = (status: number) => {
      calls.push({ method, args, status, at: Date.now() });
      notify();
    };
    const token = method === 'apps.connections.open' ? options.appToken : options.botToken;
    if (req.headers.authorization !== `Bearer ${token}`) {
      record(200);
      return json(res, 200, { ok: false, error: 'invalid_auth' });
    }
    const failure = failures.get(method)?.shift();
    if (failure) {
      record(failure.status);
      if (method === 'chat.update') edits.push(editOf(args, 'failed', failure.status));
      if (failure.status === 429) {
        return json(
          res,
          429,
          { ok: false, error: 'ratelimited' },
          { 'retry-after': String(failure.retryAfter ?? 1) },
        );
      }
      return json(res, failure.status, { ok: false, error: failure.error ?? 'internal_error' });
    }
    const ok = (body: Record<string, unknown> = {}) => {
      record(200);
      json(res, 200, { ok: true, ...body });
    };
    const refuse = (error: string) => {
      record(200);
      if (method === 'chat.update') edits.push(editOf(args, 'failed', 200));
      json(res, 200, { ok: false, error });
    };
    switch (method) {
      case 'auth.test':
        return ok({
          url: base,
          team: 'Test',
          user: 'magpie',
          team_id: 'T1',
          user_id: botUserId,
          bot_id: 'B1',
        });
      case 'apps.connections.open':
        return ok({ url: `ws://127.0.0.1:${port}/link/?ticket=${randomUUID()}` });
      case 'users.info': {
        const user = users.get(String(args['user']));
        if (!user) return refuse('user_not_found');
        return ok({
          user: {
            id: user.id,
            name: user.name,
            real_name: user.realName ?? user.name,
            is_bot: false,
            profile: { display_name: user.realName ?? '', real_name: user.realName ?? user.name },
          },
        });
      }
      case 'chat.postMessage': {
        const text = typeof args['text'] === 'string' ? args['text'] : '';
        if (text === '' && !args['blocks']) return refuse('no_text');
        if (text.length > 40_000) return refuse('msg_too_long');
        const message: FakeSlackMessage = {
          channel: String(args['channel']),
          ts: nextTs(),
          ...(args['thread_ts'] ? { threadTs: String(args['thread_ts']) } : {}),
          text,
          ...(Array.isArray(args['blocks']) ? { blocks: args['blocks'] as FakeSlackBlock[] } : {}),
          edits: 0,
          deleted: false,
        };
        messages.push(message);
        return ok({ channel: message.channel, ts: message.ts, message: { text, ts: message.ts } });
      }
      case 'chat.update': {
        const message = find(args['channel'], args['ts']);
        if (!message) return refuse('message_not_found');
        if (typeof args['text'] === 'string') message.text = args['text'];
        // chat.update replaces the message: blocks not given are gone.
        if (Array.isArray(args['blocks']) && args['blocks'].length > 0)
          message.blocks = args['blocks'] as FakeSlackBlock[];
        else delete message.blocks;
        message.edits++;
        edits.push(editOf(args, 'edited', 200));
        return ok({ channel: message.channel, ts: message.ts, text: message.text });
      }
      case 'chat.delete': {
        const message = find(args['channel'], args['ts']);
        if (!message) return refuse('message_not_found');
        message.deleted = true;
        return ok({ channel: message.channel, ts: message.ts });
      }
      case 'reactions.add':
      case 'reactions.remove': {
        const key = `${args['channel']}/${args['timestamp']}`;
        const set = reactions.get(key) ?? new Set<string>();
        const name = String(args['name']);
        if (method === 'reactions.add') {
          if (set.has(name)) return refuse('already_reacted');
          set.add(name);
        } else if (!set.delete(name)) return refuse('no_reaction');
        reactions.set(key, set);
        return ok();
      }
      case 'files.getUploadURLExternal': {
        const filename = typeof args['filename'] === 'string' ? args['filename'] : '';
        const length = Number(args['length']);
        if (filename === '' || !Number.isInteger(length) || length < 1) return refuse('invalid_arguments');
        const id = newId('F');
        uploads.push({
          id,
          filename,
          length,
          title: undefined,
          channel: undefined,
          threadTs: undefined,
          bytes: Buffer.alloc(0),
          completed: false,
        });
        return ok({ upload_url: `${base}/upload/v1/${id}`, file_id: id });
      }
      case 'files.completeUploadExternal': {
        const listed = Array.isArray(args['files'])
          ? (args['files'] as Array<{ id?: string; title?: string }>)
          : [];
        if (listed.length === 0) return refuse('invalid_arguments');
        const done: FakeSlackUpload[] = [];
        for (const entry of listed) {
          const upload = uploads.find((u) => u.id === entry.id && !u.completed);
          // Slack refuses a file whose bytes never arrived, or not all of them.
          if (!upload || upload.bytes.length !== upload.length) return refuse('file_not_found');
          done.push(upload);
        }
        for (const upload of done) {
          const title = listed.find((f) => f.id === upload.id)?.title;
          upload.completed = true;
          upload.title = typeof title === 'string' ? title : undefined;
          upload.channel = typeof args['channel_id'] === 'string' ? args['channel_id'] : undefined;
          upload.threadTs = typeof args['thread_ts'] === 'string' ? args['thread_ts'] : undefined;
        }
        return ok({ files: done.map((u) => ({ id: u.id, title: u.title ?? u.filename })) });
      }
      default:
        return refuse('unknown_method');
    }
  }

  /** The upload URL getUploadURLExternal handed out: the bytes as the multipart field `body` (as the SDK posts them). */
  async function receiveUpload(req: IncomingMessage, res: ServerResponse, url: URL) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const upload = uploads.find((u) => `/upload/v1/${u.id}` === url.pathname && !u.completed);
    calls.push({
      method: 'POST /upload',
      args: { path: url.pathname },
      status: upload ? 200 : 404,
      at: Date.now(),
    });
    notify();
    if (!upload) return json(res, 404, { ok: false });
    try {
      const form = await new Request(base, {
        method: 'POST',
        headers: { 'content-type': String(req.headers['content-type'] ?? '') },
        body: Buffer.concat(chunks),
      }).formData();
      const file = form.get('body');
      if (!(file instanceof Blob)) return json(res, 400, { ok: false, error: 'no body field' });
      upload.bytes = Buffer.from(await file.arrayBuffer());
    } catch {
      // Slack also takes the raw bytes.
      upload.bytes = Buffer.concat(chunks);
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`OK - ${upload.bytes.length}`);
  }

  function editOf(
    args: Record<string, unknown>,
    outcome: 'edited' | 'failed',
    status: number,
  ): FakeSlackEdit {
    return {
      channel: String(args['channel']),
      ts: String(args['ts']),
      text: typeof args['text'] === 'string' ? args['text'] : '',
      at: Date.now(),
      outcome,
      status,
    };
  }

  wss.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      notify();
    });
    socket.on('message', (raw) => {
      const ack = JSON.parse(String(raw)) as { envelope_id?: string };
      const envelope = envelopes.find((e) => e.envelopeId === ack.envelope_id);
      if (!envelope) return;
      if (acksToLose > 0) {
        acksToLose--;
        return;
      }
      envelope.acked = true;
      notify();
    });
    socket.send(
      JSON.stringify({
        type: 'hello',
        num_connections: sockets.size,
        connection_info: { app_id: 'A1' },
        debug_info: { host: 'fake-slack', approximate_connection_time: 18060 },
      }),
    );
    notify();
  });

  /** Sends an envelope on the newest open connection. */
  function send(envelope: FakeEnvelope) {
    const socket = [...sockets].at(-1);
    if (!socket) throw new Error('fake slack: no Socket Mode connection to deliver to');
    envelopes.push(envelope);
    socket.send(
      JSON.stringify({
        envelope_id: envelope.envelopeId,
        type: envelope.type,
        payload: envelope.payload,
        accepts_response_payload: false,
        ...(envelope.type === 'events_api'
          ? {
              retry_attempt: envelope.retryAttempt,
              retry_reason: envelope.retryAttempt > 0 ? 'timeout' : '',
            }
          : {}),
      }),
    );
  }

  function shownMessages(channel: string, threadTs?: string): FakeSlackMessage[] {
    return messages.filter(
      (m) => m.channel === channel && !m.deleted && (threadTs === undefined || m.threadTs === threadTs),
    );
  }

  const channelTypeOf = (channel: string) => (channel.startsWith('D') ? 'im' : 'channel');

  return {
    apiRoot: `${base}/api/`,
    botUserId,
    calls,
    uploads,
    edits,
    envelopes,
    newId,
    addUser: (user) => users.set(user.id, user),
    addUserMessage(channel, user, text) {
      const ts = nextTs();
      userMessages.set(`${channel}/${ts}`, { channel, ts, user, text });
      return ts;
    },
    deliverMessage(message) {
      const ts = nextTs();
      userMessages.set(`${message.channel}/${ts}`, {
        channel: message.channel,
        ts,
        user: message.user,
        text: message.text,
      });
      const event: Record<string, unknown> = {
        type: 'message',
        ...(message.files ? { subtype: 'file_share', files: message.files } : {}),
        channel: message.channel,
        channel_type: message.channelType ?? channelTypeOf(message.channel),
        user: message.user,
        text: message.text,
        ts,
        event_ts: ts,
        client_msg_id: randomUUID(),
        team: 'T1',
        ...(message.threadTs ? { thread_ts: message.threadTs } : {}),
        ...(message.parentUserId ? { parent_user_id: message.parentUserId } : {}),
      };
      const eventId = `Ev${newId('E')}`;
      const envelopeId = randomUUID();
      send({
        envelopeId,
        type: 'events_api',
        retryAttempt: 0,
        acked: false,
        payload: {
          token: 'verification-token',
          team_id: 'T1',
          api_app_id: 'A1',
          event,
          type: 'event_callback',
          event_id: eventId,
          event_time: Math.floor(Date.now() / 1000),
          authorizations: [{ team_id: 'T1', user_id: botUserId, is_bot: true }],
          is_ext_shared_channel: false,
          event_context: randomUUID(),
        },
      });
      return { ts, eventId, envelopeId };
    },
    redeliver(envelopeId) {
      const original = envelopes.find((e) => e.envelopeId === envelopeId);
      if (!original) throw new Error(`fake slack: no envelope ${envelopeId}`);
      const again: FakeEnvelope = {
        ...original,
        envelopeId: randomUUID(),
        retryAttempt: original.retryAttempt + 1,
        acked: false,
      };
      send(again);
      return again.envelopeId;
    },
    loseAcks(n) {
      acksToLose += n;
    },
    pressButton(press) {
      const message = find(press.channel, press.ts);
      const button = message?.blocks
        ?.flatMap((b) => (b.type === 'actions' ? (b.elements ?? []) : []))
        .find((e) => e.action_id === press.actionId);
      if (!message || !button) {
        throw new Error(`fake slack: message ${press.ts} shows no button "${press.actionId}"`);
      }
      const envelopeId = randomUUID();
      const actionTs = `${Math.floor(Date.now() / 1000)}.${String(++counter).padStart(6, '0')}`;
      send({
        envelopeId,
        type: 'interactive',
        retryAttempt: 0,
        acked: false,
        payload: {
          type: 'block_actions',
          user: { id: press.user.id, username: press.user.name, name: press.user.name, team_id: 'T1' },
          api_app_id: 'A1',
          token: 'verification-token',
          container: {
            type: 'message',
            message_ts: message.ts,
            channel_id: message.channel,
            is_ephemeral: false,
            ...(message.threadTs ? { thread_ts: message.threadTs } : {}),
          },
          trigger_id: randomUUID(),
          team: { id: 'T1', domain: 'test' },
          channel: {
            id: message.channel,
            name: message.channel.startsWith('D') ? 'directmessage' : 'general',
          },
          message: {
            type: 'message',
            user: botUserId,
            ts: message.ts,
            text: message.text,
            ...(message.blocks ? { blocks: message.blocks } : {}),
            ...(message.threadTs ? { thread_ts: message.threadTs } : {}),
          },
          response_url: `${base}/actions/${envelopeId}`,
          actions: [
            {
              action_id: button.action_id,
              block_id: 'actions',
              text: { type: 'plain_text', text: button.text?.text ?? '' },
              value: button.value,
              type: 'button',
              action_ts: actionTs,
            },
          ],
        },
      });
      return envelopeId;
    },
    messages: shownMessages,
    shown(channel, threadTs) {
      return shownMessages(channel, threadTs).map((m) =>
        m.blocks
          ? m.blocks
              .filter((b) => b.type === 'section')
              .map((b) => b.text?.text ?? '')
              .join('')
          : m.text,
      );
    },
    reactions: (channel, ts) => [...(reactions.get(`${channel}/${ts}`) ?? [])],
    failNext(method, failure) {
      const list = failures.get(method) ?? [];
      list.push(failure);
      failures.set(method, list);
    },
    addFile(name, mimetype, bytes) {
      const id = newId('F');
      const path = `/files/${id}/${encodeURIComponent(name)}`;
      files.set(path, { mimetype, bytes });
      return {
        id,
        name,
        mimetype,
        size: bytes.length,
        url_private: `${base}${path}`,
        url_private_download: `${base}${path}`,
      };
    },
    connections: () => sockets.size,
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
          reject(new Error(`fake slack: condition not met within ${timeoutMs} ms`));
        }, timeoutMs);
        const cleanup = () => {
          clearInterval(interval);
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
      });
    },
    async close() {
      for (const s of sockets) s.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
