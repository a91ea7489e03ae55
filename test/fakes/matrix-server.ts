/**
 * A fake Matrix homeserver on 127.0.0.1: the client-server API endpoints
 * magpie's Matrix channel uses, spoken over HTTP as the spec has them
 * (`/_matrix/client/v3/...`, `Authorization: Bearer`, JSON errors with
 * `errcode`), so the real matrix-js-sdk client connects to it.
 *
 * - `login` (m.login.password, a new device unless `device_id` is given),
 *   `account/whoami`, `versions`, `profile`.
 * - `sync` with `since` and a long-poll `timeout`: one ordered log of room
 *   events and invitations; a sync gives what came after its `since` for the
 *   rooms the user is in (plus its invitations) and `next_batch`; without
 *   `since` it gives the rooms' recent timeline (history). A delivery can be
 *   repeated (`redeliver`: the same event again at a new position).
 * - `join`, `rooms/{id}/send/{type}/{txn}` (one event per access token and
 *   txn id, as servers do), `redact`, `typing`, `joined_members`, `members`,
 *   `state`; media `upload` and the authenticated
 *   `/_matrix/client/v1/media/download` (the unauthenticated v3 download
 *   answers 404, as servers freezing it do).
 * - For end-to-end encryption (matrix-keys.ts): `keys/upload`, `keys/query`,
 *   `keys/claim`, `sendToDevice`, and each sync's `to_device`,
 *   `device_lists`, one-time key counts and unused fallback key types; plus
 *   `state/{type}/{key}`, `user/{id}/filter`, `pushrules/` and `capabilities`
 *   so a second matrix-js-sdk client can `startClient` as the user.
 *
 * Test helpers act as the users (`say`, `invite`, `createRoom`) and read
 * what rooms show (`shown`: the bot's messages with their edits applied and
 * redactions removed).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type FakeMatrixKeys, fakeMatrixKeys } from './matrix-keys.js';

/** A room event as the server sends it. */
export interface FakeMatrixEvent {
  event_id: string;
  type: string;
  sender: string;
  room_id: string;
  origin_server_ts: number;
  content: Record<string, unknown>;
  state_key?: string;
}

/** A message the bot's room shows now (edits applied). */
export interface FakeMatrixShown {
  eventId: string;
  body: string;
  formattedBody?: string;
  format?: string;
  /** The thread root when it is in a thread. */
  thread?: string;
  /** m.replace edits applied to it. */
  edits: number;
}

interface Account {
  userId: string;
  password?: string;
  displayName: string;
}

interface Entry {
  pos: number;
  roomId: string;
  event: FakeMatrixEvent;
  /** An invitation for this user (shown in `rooms.invite`). */
  inviteFor?: string;
}

interface Room {
  id: string;
  members: Map<string, 'join' | 'invite' | 'leave'>;
  state: FakeMatrixEvent[];
}

export interface FakeMatrix {
  readonly url: string;
  /** The keys and to-device messages the server holds for end-to-end encryption. */
  readonly keys: FakeMatrixKeys;
  /** The server name in ids (`@name:<server>`). */
  readonly server: string;
  /** A user; with `password` it can log in, with `token` it is logged in with that access token. */
  addUser(localpart: string, options?: { password?: string; token?: string; displayName?: string }): string;
  /** A room with these members joined (the first is its creator); `encrypted` adds m.room.encryption. */
  createRoom(members: string[], options?: { encrypted?: boolean }): string;
  /** `inviter` invites `invitee` into `roomId`. */
  invite(roomId: string, inviter: string, invitee: string): void;
  /** `sender` posts an event into the room (m.room.message unless `type`); returns its event id. */
  say(roomId: string, sender: string, content: Record<string, unknown>, type?: string): string;
  /** Puts raw JSON (anything) into the room's timeline, as a broken client or server might. */
  sayRaw(roomId: string, event: Record<string, unknown>): void;
  /** The same event delivered again at a new sync position. */
  redeliver(eventId: string): void;
  /** The messages `sender` has in the room now, in order (redacted ones left out). */
  shown(roomId: string, sender: string): FakeMatrixShown[];
  /** Every event the room has, in order (edits and redactions included). */
  events(roomId: string): FakeMatrixEvent[];
  members(roomId: string): Map<string, 'join' | 'invite' | 'leave'>;
  /** Typing notifications set to true in the room. */
  typing(roomId: string): number;
  /** Every sync request: who, its `since` and `timeout`. */
  readonly syncs: Array<{ userId: string; since?: string; timeout: number }>;
  /** Successful password logins. */
  readonly logins: Array<{ userId: string; deviceId: string }>;
  /** Stores a file as media; returns its mxc:// URI. */
  upload(bytes: Buffer, contentType: string): string;
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

class MatrixError extends Error {
  constructor(
    readonly status: number,
    readonly errcode: string,
    message: string,
  ) {
    super(message);
  }
}

/** Starts the fake homeserver on a free port. */
export async function startFakeMatrix(options: { server?: string } = {}): Promise<FakeMatrix> {
  const server = options.server ?? 'fake.test';
  const accounts = new Map<string, Account>();
  const tokens = new Map<string, { userId: string; deviceId: string }>();
  const rooms = new Map<string, Room>();
  const log: Entry[] = [];
  const txns = new Map<string, string>();
  const media = new Map<string, { bytes: Buffer; contentType: string }>();
  const typingCount = new Map<string, number>();
  const syncs: FakeMatrix['syncs'] = [];
  const logins: FakeMatrix['logins'] = [];
  const waiters = new Set<() => void>();
  let pos = 0;
  let ids = 0;

  const notify = () => {
    for (const w of [...waiters]) w();
  };
  const keys = fakeMatrixKeys(() => ++pos, notify);
  const append = (roomId: string, event: FakeMatrixEvent, inviteFor?: string) => {
    log.push({ pos: ++pos, roomId, event, ...(inviteFor ? { inviteFor } : {}) });
    notify();
  };
  const newEvent = (
    roomId: string,
    sender: string,
    type: string,
    content: Record<string, unknown>,
    stateKey?: string,
  ): FakeMatrixEvent => ({
    event_id: `$${++ids}-${randomUUID().slice(0, 8)}`,
    type,
    sender,
    room_id: roomId,
    origin_server_ts: Date.now(),
    content,
    ...(stateKey !== undefined ? { state_key: stateKey } : {}),
  });
  const room = (id: string): Room => {
    const r = rooms.get(id);
    if (!r) throw new MatrixError(404, 'M_NOT_FOUND', `no room ${id}`);
    return r;
  };
  const setState = (r: Room, event: FakeMatrixEvent) => {
    r.state = r.state.filter((e) => !(e.type === event.type && e.state_key === event.state_key));
    r.state.push(event);
  };
  const membership = (roomId: string, sender: string, target: string, value: 'join' | 'invite' | 'leave') => {
    const r = room(roomId);
    r.members.set(target, value);
    const event = newEvent(roomId, sender, 'm.room.member', { membership: value }, target);
    setState(r, event);
    append(roomId, event, value === 'invite' ? target : undefined);
  };

  const syncBody = (userId: string, deviceId: string, since: number | undefined) => {
    const join: Record<string, unknown> = {};
    const invite: Record<string, unknown> = {};
    const joined = (roomId: string) => rooms.get(roomId)?.members.get(userId) === 'join';
    const roomOf = (roomId: string) => {
      const r = room(roomId);
      const existing = join[roomId] as { timeline: { events: unknown[] } } | undefined;
      if (existing) return existing;
      const count = [...r.members.values()].filter((m) => m === 'join').length;
      const entry = {
        timeline: { events: [] as unknown[], limited: false },
        state: { events: since === undefined ? r.state : [] },
        summary: { 'm.joined_member_count': count },
        ephemeral: { events: [] },
        account_data: { events: [] },
      };
      join[roomId] = entry;
      return entry;
    };
    for (const entry of log) {
      if (since !== undefined && entry.pos <= since) continue;
      if (entry.inviteFor === userId && rooms.get(entry.roomId)?.members.get(userId) === 'invite') {
        invite[entry.roomId] = { invite_state: { events: [...room(entry.roomId).state] } };
        continue;
      }
      if (joined(entry.roomId)) roomOf(entry.roomId).timeline.events.push(entry.event);
    }
    return {
      next_batch: `s${pos}`,
      rooms: { join, invite, leave: {} },
      account_data: { events: [] },
      presence: { events: [] },
      ...keys.syncPart(userId, deviceId, since),
    };
  };
  const hasNews = (userId: string, deviceId: string, since: number) =>
    keys.hasNews(userId, deviceId, since) ||
    log.some(
      (e) => e.pos > since && (e.inviteFor === userId || rooms.get(e.roomId)?.members.get(userId) === 'join'),
    );

  const http = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const e = err instanceof MatrixError ? err : new MatrixError(500, 'M_UNKNOWN', String(err));
      json(res, e.status, { errcode: e.errcode, error: e.message });
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const body = await readBody(req);
    if (path === '/_matrix/client/versions') return json(res, 200, { versions: ['v1.11', 'v1.12'] });
    if (path === '/_matrix/client/v3/login' && method === 'POST') {
      const b = parseJson(body) as {
        identifier?: { user?: string };
        user?: string;
        password?: string;
        device_id?: string;
      };
      const user = b.identifier?.user ?? b.user ?? '';
      const userId = user.startsWith('@') ? user : `@${user}:${server}`;
      const account = accounts.get(userId);
      if (!account?.password || account.password !== b.password)
        throw new MatrixError(403, 'M_FORBIDDEN', 'Invalid username or password');
      const deviceId = b.device_id ?? `DEV${++ids}`;
      const token = `syt_${randomUUID()}`;
      tokens.set(token, { userId, deviceId });
      logins.push({ userId, deviceId });
      return json(res, 200, {
        user_id: userId,
        access_token: token,
        device_id: deviceId,
        home_server: server,
      });
    }
    if (path.startsWith('/_matrix/client/v1/auth_metadata') || path === '/.well-known/matrix/client')
      throw new MatrixError(404, 'M_UNRECOGNIZED', 'not served');
    const who = authed(req, url);
    if (path === '/_matrix/client/v3/account/whoami')
      return json(res, 200, { user_id: who.userId, device_id: who.deviceId });
    if (path === '/_matrix/client/v3/sync') {
      const sinceText = url.searchParams.get('since') ?? undefined;
      const timeout = Number(url.searchParams.get('timeout') ?? '0');
      syncs.push({ userId: who.userId, ...(sinceText ? { since: sinceText } : {}), timeout });
      const since = sinceText === undefined ? undefined : Number(sinceText.replace(/^s/, ''));
      if (since !== undefined && !Number.isFinite(since))
        throw new MatrixError(400, 'M_INVALID_PARAM', 'bad since');
      if (since !== undefined && timeout > 0 && !hasNews(who.userId, who.deviceId, since)) {
        await new Promise<void>((resolve) => {
          const done = () => {
            if (!hasNews(who.userId, who.deviceId, since) && !closed) return;
            clearTimeout(timer);
            waiters.delete(done);
            resolve();
          };
          const timer = setTimeout(
            () => {
              waiters.delete(done);
              resolve();
            },
            Math.min(timeout, 30_000),
          );
          waiters.add(done);
          req.on('close', () => {
            clearTimeout(timer);
            waiters.delete(done);
            resolve();
          });
        });
      }
      return json(res, 200, syncBody(who.userId, who.deviceId, since));
    }
    if (path === '/_matrix/client/v3/keys/upload' && method === 'POST')
      return json(
        res,
        200,
        keys.upload(who.userId, who.deviceId, parseJson(body) as Record<string, unknown>),
      );
    if (path === '/_matrix/client/v3/keys/query' && method === 'POST')
      return json(res, 200, keys.query(parseJson(body) as Record<string, unknown>));
    if (path === '/_matrix/client/v3/keys/claim' && method === 'POST')
      return json(res, 200, keys.claim(parseJson(body) as Record<string, unknown>));
    let m = /^\/_matrix\/client\/v3\/sendToDevice\/([^/]+)\/([^/]+)$/.exec(path);
    if (m && method === 'PUT') {
      const key = `${req.headers.authorization}:toDevice:${m[2]}`;
      if (!txns.has(key)) {
        txns.set(key, '');
        keys.sendToDevice(who.userId, decodeURIComponent(m[1]!), parseJson(body) as Record<string, unknown>);
      }
      return json(res, 200, {});
    }
    m = /^\/_matrix\/client\/v3\/user\/([^/]+)\/filter$/.exec(path);
    if (m && method === 'POST') return json(res, 200, { filter_id: `f${++ids}` });
    if (path === '/_matrix/client/v3/pushrules/' && method === 'GET') return json(res, 200, { global: {} });
    if (path === '/_matrix/client/v3/capabilities' && method === 'GET')
      return json(res, 200, { capabilities: {} });
    m = /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/state\/([^/]+)\/?([^/]*)$/.exec(path);
    if (m && method === 'GET') {
      const r = room(decodeURIComponent(m[1]!));
      if (r.members.get(who.userId) !== 'join') throw new MatrixError(403, 'M_FORBIDDEN', 'not in the room');
      const type = decodeURIComponent(m[2]!);
      const stateKey = decodeURIComponent(m[3] ?? '');
      const found = r.state.find((e) => e.type === type && (e.state_key ?? '') === stateKey);
      if (!found) throw new MatrixError(404, 'M_NOT_FOUND', 'Event not found.');
      return json(res, 200, found.content);
    }
    m = /^\/_matrix\/client\/v3\/(?:join|rooms)\/([^/]+)(?:\/join)?$/.exec(path);
    if (m && method === 'POST') {
      const roomId = decodeURIComponent(m[1]!);
      const r = room(roomId);
      if (r.members.get(who.userId) !== 'invite' && r.members.get(who.userId) !== 'join')
        throw new MatrixError(403, 'M_FORBIDDEN', 'not invited');
      if (r.members.get(who.userId) !== 'join') membership(roomId, who.userId, who.userId, 'join');
      return json(res, 200, { room_id: roomId });
    }
    m = /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/(send|redact)\/([^/]+)\/([^/]+)$/.exec(path);
    if (m && method === 'PUT') {
      const roomId = decodeURIComponent(m[1]!);
      const key = `${req.headers.authorization}:${roomId}:${m[2]}:${m[4]}`;
      const done = txns.get(key);
      if (done) return json(res, 200, { event_id: done });
      if (room(roomId).members.get(who.userId) !== 'join')
        throw new MatrixError(403, 'M_FORBIDDEN', 'not in the room');
      const content = parseJson(body) as Record<string, unknown>;
      const event =
        m[2] === 'send'
          ? newEvent(roomId, who.userId, decodeURIComponent(m[3]!), content)
          : {
              ...newEvent(roomId, who.userId, 'm.room.redaction', content),
              redacts: decodeURIComponent(m[3]!),
            };
      txns.set(key, event.event_id);
      append(roomId, event);
      return json(res, 200, { event_id: event.event_id });
    }
    m = /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/typing\/([^/]+)$/.exec(path);
    if (m && method === 'PUT') {
      const roomId = decodeURIComponent(m[1]!);
      if ((parseJson(body) as { typing?: boolean }).typing)
        typingCount.set(roomId, (typingCount.get(roomId) ?? 0) + 1);
      notify();
      return json(res, 200, {});
    }
    m = /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/(joined_members|members|state)$/.exec(path);
    if (m && method === 'GET') {
      const r = room(decodeURIComponent(m[1]!));
      if (r.members.get(who.userId) !== 'join') throw new MatrixError(403, 'M_FORBIDDEN', 'not in the room');
      if (m[2] === 'state') return json(res, 200, r.state);
      if (m[2] === 'members')
        return json(res, 200, { chunk: r.state.filter((e) => e.type === 'm.room.member') });
      const joined: Record<string, unknown> = {};
      for (const [id, value] of r.members)
        if (value === 'join') joined[id] = { display_name: accounts.get(id)?.displayName ?? null };
      return json(res, 200, { joined });
    }
    m = /^\/_matrix\/client\/v3\/profile\/([^/]+)(?:\/displayname)?$/.exec(path);
    if (m && method === 'GET') {
      const account = accounts.get(decodeURIComponent(m[1]!));
      if (!account) throw new MatrixError(404, 'M_NOT_FOUND', 'no such user');
      return json(res, 200, { displayname: account.displayName });
    }
    if (path === '/_matrix/media/v3/upload' && method === 'POST') {
      const uri = api.upload(body, String(req.headers['content-type'] ?? 'application/octet-stream'));
      return json(res, 200, { content_uri: uri });
    }
    m = /^\/_matrix\/client\/v1\/media\/download\/([^/]+)\/([^/]+)/.exec(path);
    if (m && method === 'GET') {
      const file = media.get(`${m[1]}/${m[2]}`);
      if (!file) throw new MatrixError(404, 'M_NOT_FOUND', 'no such media');
      res.writeHead(200, { 'content-type': file.contentType, 'content-length': file.bytes.length });
      res.end(file.bytes);
      return;
    }
    throw new MatrixError(404, 'M_UNRECOGNIZED', `unrecognised request ${method} ${path}`);
  }

  /** The caller's account; unauthenticated answers 401 as the spec has it. */
  function authed(req: IncomingMessage, url: URL): { userId: string; deviceId: string } {
    const header = req.headers.authorization ?? '';
    const token = header.startsWith('Bearer ')
      ? header.slice(7)
      : (url.searchParams.get('access_token') ?? '');
    const who = tokens.get(token);
    if (!who)
      throw new MatrixError(401, token ? 'M_UNKNOWN_TOKEN' : 'M_MISSING_TOKEN', 'Unrecognised access token');
    return who;
  }

  let closed = false;
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;

  const api: FakeMatrix = {
    url: `http://127.0.0.1:${port}`,
    keys,
    server,
    syncs,
    logins,
    addUser(localpart, o = {}) {
      const userId = `@${localpart}:${server}`;
      accounts.set(userId, {
        userId,
        displayName: o.displayName ?? localpart,
        ...(o.password ? { password: o.password } : {}),
      });
      if (o.token) tokens.set(o.token, { userId, deviceId: `DEV-${localpart}` });
      return userId;
    },
    createRoom(members, o = {}) {
      const id = `!${randomUUID().slice(0, 12)}:${server}`;
      const r: Room = { id, members: new Map(), state: [] };
      rooms.set(id, r);
      const creator = members[0]!;
      const create = newEvent(id, creator, 'm.room.create', { creator }, '');
      setState(r, create);
      append(id, create);
      for (const member of members) membership(id, member, member, 'join');
      if (o.encrypted) {
        const enc = newEvent(id, creator, 'm.room.encryption', { algorithm: 'm.megolm.v1.aes-sha2' }, '');
        setState(r, enc);
        append(id, enc);
      }
      return id;
    },
    invite(roomId, inviter, invitee) {
      membership(roomId, inviter, invitee, 'invite');
    },
    say(roomId, sender, content, type = 'm.room.message') {
      const event = newEvent(roomId, sender, type, content);
      append(roomId, event);
      return event.event_id;
    },
    sayRaw(roomId, event) {
      log.push({ pos: ++pos, roomId, event: event as unknown as FakeMatrixEvent });
      notify();
    },
    redeliver(eventId) {
      const entry = log.find((e) => e.event.event_id === eventId);
      if (!entry) throw new TypeError(`no event ${eventId}`);
      append(entry.roomId, entry.event);
    },
    shown(roomId, sender) {
      const all = api.events(roomId);
      const redacted = new Set(
        all
          .filter((e) => e.type === 'm.room.redaction')
          .map((e) => (e as unknown as { redacts: string }).redacts),
      );
      const edits = new Map<string, FakeMatrixEvent[]>();
      for (const e of all) {
        const rel = e.content['m.relates_to'] as { rel_type?: string; event_id?: string } | undefined;
        if (rel?.rel_type === 'm.replace' && rel.event_id && e.sender === sender)
          edits.set(rel.event_id, [...(edits.get(rel.event_id) ?? []), e]);
      }
      return all
        .filter((e) => e.type === 'm.room.message' && e.sender === sender && !redacted.has(e.event_id))
        .filter(
          (e) => (e.content['m.relates_to'] as { rel_type?: string } | undefined)?.rel_type !== 'm.replace',
        )
        .map((e) => {
          const history = edits.get(e.event_id) ?? [];
          const latest = history.at(-1);
          const content = latest ? (latest.content['m.new_content'] as Record<string, unknown>) : e.content;
          const rel = e.content['m.relates_to'] as { rel_type?: string; event_id?: string } | undefined;
          return {
            eventId: e.event_id,
            body: String(content['body'] ?? ''),
            ...(typeof content['formatted_body'] === 'string'
              ? { formattedBody: content['formatted_body'] }
              : {}),
            ...(typeof content['format'] === 'string' ? { format: content['format'] } : {}),
            ...(rel?.rel_type === 'm.thread' && rel.event_id ? { thread: rel.event_id } : {}),
            edits: history.length,
          };
        });
    },
    events(roomId) {
      return log.filter((e) => e.roomId === roomId).map((e) => e.event);
    },
    members(roomId) {
      return room(roomId).members;
    },
    typing(roomId) {
      return typingCount.get(roomId) ?? 0;
    },
    upload(bytes, contentType) {
      const id = randomUUID().replace(/-/g, '');
      media.set(`${server}/${id}`, { bytes, contentType });
      return `mxc://${server}/${id}`;
    },
    waitFor(predicate, timeoutMs = 10_000) {
      if (predicate()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate()) return;
          clearTimeout(timer);
          clearInterval(poll);
          waiters.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          clearInterval(poll);
          reject(new Error(`fake matrix: timed out after ${timeoutMs} ms`));
        }, timeoutMs);
        // Conditions may depend on state outside the fake too (Redis, the model).
        const poll = setInterval(check, 25);
        waiters.add(check);
      });
    },
    async close() {
      closed = true;
      notify();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
  return api;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function parseJson(body: Buffer): unknown {
  try {
    return body.length === 0 ? {} : JSON.parse(body.toString('utf8'));
  } catch {
    throw new MatrixError(400, 'M_NOT_JSON', 'Content not JSON.');
  }
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
