/**
 * A fake signal-cli HTTP daemon on 127.0.0.1 (`signal-cli -a +NUMBER daemon
 * --http`): `POST /api/v1/rpc` answers JSON-RPC 2.0 (`version`,
 * `listAccounts`, `getUserStatus`, `send`, `sendTyping`, `sendReceipt`,
 * `getAttachment`; anything else -32601, as signal-cli), recording every
 * call; `GET /api/v1/events` is the Server-Sent Events stream (`event:
 * receive`, an `id` per event, `data: {"account", "envelope"}`), replaying
 * the events after a `Last-Event-ID` it knows — all it keeps when it does not
 * know the id (signal-cli restarted). `deliver` pushes an envelope to every
 * open stream; `dropStreams` ends them (the client reconnects), `setDown`
 * refuses new ones with 503 while "signal-cli restarts", `forgetIds` makes it
 * forget the ids it handed out. Messages the account sent are kept per chat
 * (a group id, or the recipient) with their style ranges.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor as poll } from './wait-for.js';

/** One JSON-RPC call as the fake saw it. */
export interface FakeSignalCall {
  method: string;
  params: Record<string, unknown>;
}

/** A message the account sent. */
export interface FakeSignalMessage {
  chat: string;
  text: string;
  /** `start:length:STYLE` as sent. */
  textStyle: string[];
  timestamp: number;
  quoteTimestamp?: number;
  quoteAuthor?: string;
  /** `attachments` sent as data URIs (`data:<type>;filename=<name>;base64,<data>`), decoded. */
  attachments?: Array<{ contentType: string; filename: string | undefined; bytes: Buffer }>;
}

/** Someone on Signal: an ACI, and a number unless they hide it. */
export interface FakeSignalUser {
  uuid: string;
  number?: string;
  name?: string;
}

/** What a user writes; the fake makes the envelope. */
export interface FakeSignalWrite {
  from: FakeSignalUser;
  text?: string;
  /** A group's base64 id; absent: a DM to the account. */
  groupId?: string;
  mentions?: Array<{ start: number; length: number; number?: string; uuid?: string; name?: string }>;
  quote?: { id: number; authorNumber?: string; authorUuid?: string };
  attachments?: Array<{ id: string; contentType: string; filename?: string; size: number }>;
  /** The account the event names. @defaultValue the fake's account */
  account?: string;
}

export interface FakeSignalCli {
  url: string;
  account: string;
  /** The account's ACI. */
  aci: string;
  calls: FakeSignalCall[];
  /** Streams opened so far. */
  streamOpens: number;
  /** Streams open now. */
  openStreams(): number;
  /** Builds and pushes an envelope; resolves its timestamp (its id for quotes). */
  deliver(write: FakeSignalWrite): number;
  /** Pushes an event's data as is (malformed input, an envelope written by hand). */
  deliverRaw(data: string): void;
  /** Pushes the event of `timestamp` again (a replay). */
  redeliver(timestamp: number): void;
  /** Ends every open stream. */
  dropStreams(): void;
  /** While down, new streams are refused with 503. */
  setDown(down: boolean): void;
  /** Forgets the ids handed out (a restarted signal-cli sends all it keeps). */
  forgetIds(): void;
  /** An attachment getAttachment will serve. */
  addAttachment(id: string, bytes: Buffer): void;
  /** The next call of `method` answers this JSON-RPC error. */
  failNext(method: string, code: number, message: string): void;
  /** What the account sent to a chat (a group id or a person's id), in order. */
  messages(chat: string): FakeSignalMessage[];
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

interface Kept {
  id: number;
  timestamp: number;
  data: string;
}

/** Starts the fake daemon for `account` on a free loopback port. */
export async function startFakeSignalCli(
  options: { account?: string; aci?: string } = {},
): Promise<FakeSignalCli> {
  const account = options.account ?? '+15550000001';
  const aci = options.aci ?? '00000000-0000-4000-8000-000000000001';
  const calls: FakeSignalCall[] = [];
  const sent: FakeSignalMessage[] = [];
  const kept: Kept[] = [];
  const streams = new Set<ServerResponse>();
  const attachments = new Map<string, Buffer>();
  const failures = new Map<string, { code: number; message: string }>();
  let nextId = 1;
  let epoch = 1;
  let clock = Date.now();
  let down = false;
  const fake = { streamOpens: 0 };

  const push = (event: Kept, to: Iterable<ServerResponse>) => {
    for (const res of to) res.write(`id:${epoch}-${event.id}\nevent:receive\ndata:${event.data}\n\n`);
  };
  const keep = (timestamp: number, data: string) => {
    const event = { id: nextId++, timestamp, data };
    kept.push(event);
    if (kept.length > 1000) kept.shift();
    push(event, streams);
  };

  const answer = (method: string, params: Record<string, unknown>): { result?: unknown; error?: unknown } => {
    const failure = failures.get(method);
    if (failure) {
      failures.delete(method);
      return { error: failure };
    }
    switch (method) {
      case 'version':
        return { result: { version: '0.13.99-fake' } };
      case 'listAccounts':
        return { result: [{ number: account }] };
      case 'getUserStatus':
        return {
          result: [{ recipient: account, number: account, uuid: aci, isRegistered: true }],
        };
      case 'send': {
        const chat =
          typeof params['groupId'] === 'string'
            ? params['groupId']
            : String((params['recipient'] as unknown[] | undefined)?.[0] ?? '');
        const files: NonNullable<FakeSignalMessage['attachments']> = [];
        for (const uri of (params['attachments'] as unknown[] | undefined) ?? []) {
          const file = dataUri(uri);
          // signal-cli reads anything else as a path on its own disk, which this fake has none of.
          if (!file)
            return {
              error: {
                code: -1,
                message: `Failed to send message: attachment not found: ${String(uri).slice(0, 40)}`,
              },
            };
          files.push(file);
        }
        const timestamp = ++clock;
        sent.push({
          ...(files.length > 0 ? { attachments: files } : {}),
          chat,
          text: String(params['message'] ?? ''),
          textStyle: ((params['textStyle'] as string[] | undefined) ?? []).map(String),
          timestamp,
          ...(params['quoteTimestamp'] !== undefined
            ? { quoteTimestamp: Number(params['quoteTimestamp']) }
            : {}),
          ...(params['quoteAuthor'] !== undefined ? { quoteAuthor: String(params['quoteAuthor']) } : {}),
        });
        return { result: { timestamp, results: [] } };
      }
      case 'sendTyping':
      case 'sendReceipt':
        return { result: {} };
      case 'getAttachment': {
        const bytes = attachments.get(String(params['id']));
        if (!bytes)
          return { error: { code: -1, message: `Could not find attachment with ID: ${params['id']}` } };
        return { result: { data: bytes.toString('base64') } };
      }
      default:
        return { error: { code: -32601, message: 'Method not implemented' } };
    }
  };

  const rpc = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST') return end(res, 405);
    if (!String(req.headers['content-type'] ?? '').startsWith('application/json')) return end(res, 415);
    let body: { id?: unknown; method?: unknown; params?: unknown };
    try {
      body = JSON.parse(await read(req));
    } catch {
      return json(res, { jsonrpc: '2.0', error: { code: -32700, message: 'parse error' }, id: null });
    }
    const method = String(body.method ?? '');
    const params = (body.params ?? {}) as Record<string, unknown>;
    calls.push({ method, params });
    json(res, { jsonrpc: '2.0', id: body.id ?? null, ...answer(method, params) });
  };

  const events = (req: IncomingMessage, res: ServerResponse) => {
    if (down) return end(res, 503);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    fake.streamOpens++;
    const last = String(req.headers['last-event-id'] ?? '');
    const [lastEpoch, lastId] = last.split('-').map(Number);
    if (last !== '') {
      const known = lastEpoch === epoch && kept.some((e) => e.id === lastId);
      const replay = known ? kept.filter((e) => e.id > lastId!) : [...kept];
      for (const e of replay) push(e, [res]);
    }
    streams.add(res);
    res.on('close', () => streams.delete(res));
  };

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    if (path === '/api/v1/rpc') void rpc(req, res);
    else if (path === '/api/v1/events' && req.method === 'GET') events(req, res);
    else if (path === '/api/v1/check') end(res, 200);
    else end(res, 404);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    account,
    aci,
    calls,
    get streamOpens() {
      return fake.streamOpens;
    },
    openStreams: () => streams.size,
    deliver(write) {
      const timestamp = ++clock;
      const envelope = {
        source: write.from.number ?? write.from.uuid,
        sourceNumber: write.from.number ?? null,
        sourceUuid: write.from.uuid,
        sourceName: write.from.name ?? null,
        sourceDevice: 1,
        timestamp,
        serverReceivedTimestamp: timestamp,
        serverDeliveredTimestamp: timestamp,
        dataMessage: {
          timestamp,
          message: write.text ?? null,
          expiresInSeconds: 0,
          viewOnce: false,
          ...(write.mentions ? { mentions: write.mentions } : {}),
          ...(write.quote ? { quote: { ...write.quote, text: '', attachments: [] } } : {}),
          ...(write.attachments ? { attachments: write.attachments } : {}),
          ...(write.groupId ? { groupInfo: { groupId: write.groupId, type: 'DELIVER' } } : {}),
        },
      };
      keep(timestamp, JSON.stringify({ envelope, account: write.account ?? account }));
      return timestamp;
    },
    deliverRaw(data) {
      keep(++clock, data);
    },
    redeliver(timestamp) {
      const event = kept.find((e) => e.timestamp === timestamp);
      if (!event) throw new TypeError(`no event ${timestamp}`);
      push({ ...event }, streams);
    },
    dropStreams() {
      for (const res of streams) res.destroy();
      streams.clear();
    },
    setDown(value) {
      down = value;
    },
    forgetIds() {
      epoch++;
    },
    addAttachment(id, bytes) {
      attachments.set(id, bytes);
    },
    failNext(method, code, message) {
      failures.set(method, { code, message });
    },
    messages: (chat) => sent.filter((m) => m.chat === chat),
    waitFor: (predicate, timeoutMs = 10_000) =>
      poll(() => predicate() || undefined, timeoutMs).then(() => {}),
    async close() {
      for (const res of streams) res.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function read(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function json(res: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function end(res: ServerResponse, status: number): void {
  res.writeHead(status);
  res.end();
}

/** A signal-cli attachment data URI, `data:<MIME-TYPE>[;filename=<FILENAME>];base64,<DATA>`, decoded; else undefined. */
function dataUri(
  uri: unknown,
): { contentType: string; filename: string | undefined; bytes: Buffer } | undefined {
  const match = /^data:([\w.+-]+\/[\w.+-]+)(?:;filename=([^;,]+))?;base64,([A-Za-z0-9+/]*={0,2})$/.exec(
    String(uri),
  );
  if (!match) return undefined;
  return {
    contentType: match[1] as string,
    filename: match[2],
    bytes: Buffer.from(match[3] as string, 'base64'),
  };
}
