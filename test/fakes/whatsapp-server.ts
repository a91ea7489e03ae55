/**
 * A fake WhatsApp Cloud API on 127.0.0.1, both halves of it. The Graph API
 * (`http://127.0.0.1:PORT/v21.0`, `Authorization: Bearer` checked, Meta's
 * error body `{ error: { message, type, code, error_data } }` on refusals):
 * `GET /<phone number id>` (the number), `POST /<phone number id>/messages`
 * (a text or interactive send, recorded and answered with a `wamid`; or
 * `status: read`, with or without `typing_indicator`, recorded against the
 * chat of the message it names), `GET /<media id>` (a download URL) and the
 * download itself. A number's 24-hour window can be closed: sends to it are
 * refused with 131047 until that person writes again. Any send can be made
 * to fail next. And Meta's webhook poster: what a user writes (text, an
 * image, a voice note, a button reply) and status callbacks become signed
 * POSTs (`X-Hub-Signature-256` with the app secret) to magpie's webhook URL;
 * a POST's exact bytes can be posted again (Meta's redelivery), or posted
 * with any signature (or none).
 */
import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from './wait-for.js';

/** One Graph API call as the fake saw it. */
export interface FakeGraphCall {
  method: string;
  path: string;
  body: Record<string, unknown>;
  status: number;
  at: number;
}

/** A message the business sent, as the user's phone shows it. */
export interface FakeWaSent {
  id: string;
  to: string;
  type: 'text' | 'interactive' | 'audio';
  text: string;
  /** Reply buttons (interactive): id and title. */
  buttons: Array<{ id: string; title: string }>;
  /** An audio message: the uploaded media id, and whether it is a voice note. */
  audio?: { mediaId: string; voice: boolean };
  at: number;
}

/** A file uploaded with `POST /<phone number id>/media` (multipart, like Meta's). */
export interface FakeWaUpload {
  id: string;
  /** The `type` field. */
  type: string;
  fileName: string;
  /** The file part's own Content-Type. */
  fileType: string;
  bytes: Buffer;
}

/** A read receipt (and typing indicator) the business sent about a user's message. */
export interface FakeWaRead {
  messageId: string;
  /** The chat of that message (the user's number), when the fake knows the message. */
  chat: string | undefined;
  typing: boolean;
  at: number;
}

/** A refusal of the next send. */
export interface FakeWaFailure {
  status: number;
  code?: number;
  message?: string;
}

/** A webhook POST and magpie's answer. */
export interface FakeWebhookPost {
  body: Buffer;
  status: number;
  text: string;
}

/** What a user writes. */
export interface FakeWaUserMessage {
  /** The user's number (digits, as WhatsApp gives it). */
  from: string;
  /** Their profile name. @defaultValue none */
  name?: string;
  text?: string;
  /** An image, by a media id from `addMedia`. */
  image?: { mediaId: string; mimeType?: string; caption?: string };
  /** A voice note (or audio), by a media id from `addMedia`. */
  audio?: { mediaId: string; mimeType?: string; voice?: boolean };
  /** A press of a reply button on one of the business's messages. */
  buttonReply?: { id: string; title: string; contextId: string };
  /** Addressed to this phone number id instead of the fake's. */
  phoneNumberId?: string;
}

export interface FakeWhatsApp {
  /** For WHATSAPP_API_ROOT. */
  apiRoot: string;
  token: string;
  appSecret: string;
  phoneNumberId: string;
  /** The business number, as shown. */
  displayNumber: string;
  calls: FakeGraphCall[];
  sent: FakeWaSent[];
  reads: FakeWaRead[];
  /** Media downloads: the media id and whether the token came with it. */
  downloads: Array<{ mediaId: string; authorized: boolean }>;
  /** Media the business uploaded (`POST /<phone number id>/media`). */
  uploads: FakeWaUpload[];
  posts: FakeWebhookPost[];
  /** Where webhooks are posted (magpie's `/webhooks/whatsapp`). */
  webhookUrl: string | undefined;
  /** A fresh message id (`wamid.…`). */
  newMessageId(): string;
  /** Serves bytes as received media; returns its media id. */
  addMedia(bytes: Buffer, mimeType: string): string;
  /** The notification Meta would post for `message` (its id is `id`, default a fresh one). */
  messageNotification(message: FakeWaUserMessage, id?: string): Record<string, unknown>;
  /** The notification of a status callback. */
  statusNotification(status: {
    messageId: string;
    recipient: string;
    status: 'sent' | 'delivered' | 'read' | 'failed';
    errors?: Array<{ code: number; title: string; details?: string }>;
  }): Record<string, unknown>;
  /**
   * A user writes: the signed POST of their message. Resolves with the message id, the bytes
   * posted and magpie's answer. Opens their 24-hour window.
   */
  deliverMessage(
    message: FakeWaUserMessage,
  ): Promise<{ messageId: string; body: Buffer; status: number; text: string }>;
  /**
   * POSTs `body` (an object is serialised) to the webhook URL, signed with the app secret unless
   * `signature` says otherwise (`null`: no header). Resolves with magpie's answer.
   */
  post(
    body: Buffer | Record<string, unknown>,
    options?: { signature?: string | null },
  ): Promise<FakeWebhookPost>;
  /** GETs the webhook URL with a query (the subscription handshake). */
  get(query: Record<string, string>): Promise<{ status: number; text: string }>;
  /** The `sha256=` signature of `body` with `secret` (the app secret by default). */
  sign(body: Buffer | string, secret?: string): string;
  /** Closes a number's 24-hour window: sends to it are refused with 131047 until they write again. */
  closeWindow(number: string): void;
  /** A later send fails with this: the next one, or the one after `skip` that succeed. */
  failNext(failure: FakeWaFailure, skip?: number): void;
  /** The business's messages to a number, in order. */
  messages(to: string): FakeWaSent[];
  /** Their texts (an interactive message's body). */
  shown(to: string): string[];
  /** Typing indicators sent in a chat. */
  typing(chat: string): number;
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export interface FakeWhatsAppOptions {
  token: string;
  appSecret: string;
  /** @defaultValue '109876543210' */
  phoneNumberId?: string;
  webhookUrl?: string;
}

/** Starts the fake on a free 127.0.0.1 port. */
export async function startFakeWhatsApp(options: FakeWhatsAppOptions): Promise<FakeWhatsApp> {
  const phoneNumberId = options.phoneNumberId ?? '109876543210';
  const displayNumber = '+1 555-010-0000';
  const businessNumber = '15550100000';
  const calls: FakeGraphCall[] = [];
  const sent: FakeWaSent[] = [];
  const reads: FakeWaRead[] = [];
  const downloads: Array<{ mediaId: string; authorized: boolean }> = [];
  const uploads: FakeWaUpload[] = [];
  const posts: FakeWebhookPost[] = [];
  const media = new Map<string, { bytes: Buffer; mimeType: string }>();
  /** Every user message id the fake made → its chat. */
  const chatOf = new Map<string, string>();
  const closed = new Set<string>();
  const failures: Array<FakeWaFailure & { skip: number }> = [];
  let counter = 0;
  const newMessageId = () =>
    `wamid.${Buffer.from(`${randomUUID()}-${++counter}`).toString('base64url').slice(0, 40)}`;

  const http = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => graphError(res, 500, 1, String(err)));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const apiRoot = `${base}/v21.0`;

  function json(res: ServerResponse, status: number, body: unknown) {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  function graphError(res: ServerResponse, status: number, code: number, message: string, details?: string) {
    json(res, status, {
      error: {
        message,
        type: 'OAuthException',
        code,
        ...(details ? { error_data: { messaging_product: 'whatsapp', details } } : {}),
        fbtrace_id: 'AbCdEf',
      },
    });
  }

  async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', base);
    const authorized = req.headers.authorization === `Bearer ${options.token}`;
    if (req.method === 'GET' && url.pathname.startsWith('/media-download/')) {
      const id = decodeURIComponent(url.pathname.slice('/media-download/'.length));
      downloads.push({ mediaId: id, authorized });
      const file = media.get(id);
      if (!authorized) return graphError(res, 401, 190, 'Invalid OAuth access token');
      if (!file) return graphError(res, 404, 100, 'media not found');
      res.writeHead(200, { 'content-type': file.mimeType, 'content-length': String(file.bytes.length) });
      res.end(file.bytes);
      return;
    }
    if (!url.pathname.startsWith('/v21.0/')) return graphError(res, 404, 100, 'Unknown path');
    const path = url.pathname.slice('/v21.0'.length);
    if (req.method === 'POST' && path === `/${phoneNumberId}/media`) return upload(req, res, authorized);
    const body = req.method === 'POST' ? await readJson(req) : {};
    const record = (status: number) => {
      calls.push({ method: req.method ?? 'GET', path, body, status, at: Date.now() });
    };
    if (!authorized) {
      record(401);
      return graphError(res, 401, 190, 'Error validating access token: Session has expired');
    }
    if (req.method === 'GET' && path === `/${phoneNumberId}`) {
      record(200);
      return json(res, 200, {
        display_phone_number: displayNumber,
        verified_name: 'Magpie Test',
        id: phoneNumberId,
      });
    }
    if (req.method === 'GET' && media.has(decodeURIComponent(path.slice(1)))) {
      const id = decodeURIComponent(path.slice(1));
      const file = media.get(id)!;
      record(200);
      return json(res, 200, {
        messaging_product: 'whatsapp',
        url: `${base}/media-download/${encodeURIComponent(id)}`,
        mime_type: file.mimeType,
        sha256: 'x',
        file_size: file.bytes.length,
        id,
      });
    }
    if (req.method === 'POST' && path === `/${phoneNumberId}/messages`) return messages(res, body, record);
    record(400);
    return graphError(res, 400, 100, `Unsupported request: ${req.method} ${path}`);
  }

  /** POST /<phone number id>/media: multipart with messaging_product, type and file, as Meta takes it. */
  async function upload(req: IncomingMessage, res: ServerResponse, authorized: boolean) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const record = (status: number, body: Record<string, unknown>) =>
      calls.push({ method: 'POST', path: `/${phoneNumberId}/media`, body, status, at: Date.now() });
    if (!authorized) {
      record(401, {});
      return graphError(res, 401, 190, 'Error validating access token: Session has expired');
    }
    let form: FormData;
    try {
      form = await new Request(base, {
        method: 'POST',
        headers: { 'content-type': String(req.headers['content-type'] ?? '') },
        body: Buffer.concat(chunks),
      }).formData();
    } catch {
      record(400, {});
      return graphError(res, 400, 100, '(#100) The request is not multipart/form-data');
    }
    const file = form.get('file');
    const fields = { messaging_product: form.get('messaging_product'), type: form.get('type') };
    if (
      fields.messaging_product !== 'whatsapp' ||
      typeof fields.type !== 'string' ||
      !(file instanceof Blob)
    ) {
      record(400, fields);
      return graphError(res, 400, 100, '(#100) messaging_product, type and file are required');
    }
    const id = String(1000000 + uploads.length + media.size);
    const bytes = Buffer.from(await file.arrayBuffer());
    uploads.push({
      id,
      type: fields.type,
      fileName: file instanceof File ? file.name : '',
      fileType: file.type,
      bytes,
    });
    media.set(id, { bytes, mimeType: fields.type });
    record(200, fields);
    return json(res, 200, { id });
  }

  function messages(res: ServerResponse, body: Record<string, unknown>, record: (status: number) => void) {
    if (body['messaging_product'] !== 'whatsapp') {
      record(400);
      return graphError(res, 400, 100, '(#100) The parameter messaging_product is required.');
    }
    if (body['status'] === 'read') {
      const messageId = String(body['message_id'] ?? '');
      const typing = (body['typing_indicator'] as { type?: string } | undefined)?.type === 'text';
      reads.push({ messageId, chat: chatOf.get(messageId), typing, at: Date.now() });
      record(200);
      return json(res, 200, { success: true });
    }
    const to = String(body['to'] ?? '');
    const failure = failures[0]?.skip === 0 ? failures.shift() : undefined;
    if (failures[0] && failures[0].skip > 0 && !failure) failures[0].skip--;
    if (failure) {
      record(failure.status);
      return graphError(
        res,
        failure.status,
        failure.code ?? 1,
        failure.message ?? 'An unknown error occurred',
      );
    }
    if (closed.has(to)) {
      record(400);
      return graphError(
        res,
        400,
        131047,
        '(#131047) Re-engagement message',
        'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
      );
    }
    const refuse = (message: string) => {
      record(400);
      graphError(res, 400, 100, `(#100) ${message}`);
    };
    if (!/^\d{7,15}$/.test(to)) return refuse('Invalid parameter: to');
    let message: FakeWaSent;
    const id = newMessageId();
    if (body['type'] === 'text') {
      const text = String((body['text'] as { body?: unknown } | undefined)?.body ?? '');
      if (text === '') return refuse('The parameter text.body is required.');
      if (text.length > 4096) return refuse('Param text.body must be at most 4096 characters long.');
      message = { id, to, type: 'text', text, buttons: [], at: Date.now() };
    } else if (body['type'] === 'interactive') {
      const interactive = body['interactive'] as {
        type?: string;
        body?: { text?: string };
        action?: { buttons?: Array<{ type?: string; reply?: { id?: string; title?: string } }> };
      };
      const text = interactive?.body?.text ?? '';
      const buttons = (interactive?.action?.buttons ?? []).map((b) => ({
        id: String(b.reply?.id ?? ''),
        title: String(b.reply?.title ?? ''),
      }));
      if (interactive?.type !== 'button') return refuse('Unsupported interactive type');
      if (text === '' || text.length > 1024)
        return refuse('Param interactive.body.text must be 1 to 1024 characters long.');
      if (buttons.length < 1 || buttons.length > 3) return refuse('Buttons must be 1 to 3.');
      for (const b of buttons) {
        if (b.title === '' || [...b.title].length > 20)
          return refuse('Button title length invalid. Min length: 1, Max length: 20');
        if (b.id === '' || b.id.length > 256) return refuse('Button id length invalid.');
      }
      if (new Set(buttons.map((b) => b.title)).size !== buttons.length)
        return refuse('Button title must be unique.');
      message = { id, to, type: 'interactive', text, buttons, at: Date.now() };
    } else if (body['type'] === 'audio') {
      const audio = body['audio'] as { id?: unknown; voice?: unknown } | undefined;
      const mediaId = String(audio?.id ?? '');
      if (!media.has(mediaId)) return refuse('Invalid parameter: audio.id is not an uploaded media id');
      if (audio?.voice === true && media.get(mediaId)?.mimeType !== 'audio/ogg')
        return refuse('A voice message must be OGG/Opus (audio/ogg)');
      message = {
        id,
        to,
        type: 'audio',
        text: '',
        buttons: [],
        audio: { mediaId, voice: audio?.voice === true },
        at: Date.now(),
      };
    } else {
      return refuse(`Unsupported message type ${String(body['type'])}`);
    }
    sent.push(message);
    record(200);
    return json(res, 200, {
      messaging_product: 'whatsapp',
      contacts: [{ input: to, wa_id: to }],
      messages: [{ id }],
    });
  }

  const sign = (body: Buffer | string, secret = options.appSecret) =>
    `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

  const envelope = (value: Record<string, unknown>, number = phoneNumberId) => ({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '102290129340398',
        changes: [
          {
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: businessNumber, phone_number_id: number },
              ...value,
            },
            field: 'messages',
          },
        ],
      },
    ],
  });

  const fake: FakeWhatsApp = {
    apiRoot,
    token: options.token,
    appSecret: options.appSecret,
    phoneNumberId,
    displayNumber,
    calls,
    sent,
    reads,
    downloads,
    uploads,
    posts,
    webhookUrl: options.webhookUrl,
    newMessageId,
    addMedia(bytes, mimeType) {
      const id = String(1_000_000_000 + ++counter);
      media.set(id, { bytes, mimeType });
      return id;
    },
    messageNotification(message, id = newMessageId()) {
      chatOf.set(id, message.from);
      const common = { from: message.from, id, timestamp: String(Math.floor(Date.now() / 1000)) };
      let content: Record<string, unknown>;
      if (message.buttonReply) {
        content = {
          context: { from: businessNumber, id: message.buttonReply.contextId },
          type: 'interactive',
          interactive: {
            type: 'button_reply',
            button_reply: { id: message.buttonReply.id, title: message.buttonReply.title },
          },
        };
      } else if (message.image) {
        content = {
          type: 'image',
          image: {
            ...(message.image.caption ? { caption: message.image.caption } : {}),
            mime_type: message.image.mimeType ?? 'image/jpeg',
            sha256: 'x',
            id: message.image.mediaId,
          },
        };
      } else if (message.audio) {
        content = {
          type: 'audio',
          audio: {
            mime_type: message.audio.mimeType ?? 'audio/ogg; codecs=opus',
            sha256: 'x',
            id: message.audio.mediaId,
            voice: message.audio.voice ?? true,
          },
        };
      } else {
        content = { type: 'text', text: { body: message.text ?? '' } };
      }
      return envelope(
        {
          contacts: [{ profile: { name: message.name ?? '' }, wa_id: message.from }],
          messages: [{ ...common, ...content }],
        },
        message.phoneNumberId,
      );
    },
    statusNotification(status) {
      return envelope({
        statuses: [
          {
            id: status.messageId,
            status: status.status,
            timestamp: String(Math.floor(Date.now() / 1000)),
            recipient_id: status.recipient,
            ...(status.status === 'failed'
              ? {
                  errors: (status.errors ?? []).map((e) => ({
                    code: e.code,
                    title: e.title,
                    message: e.title,
                    ...(e.details ? { error_data: { details: e.details } } : {}),
                    href: 'https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/',
                  })),
                }
              : {
                  conversation: { id: 'c1', origin: { type: 'service' } },
                  pricing: { billable: true, pricing_model: 'PMP', category: 'service' },
                }),
          },
        ],
      });
    },
    async deliverMessage(message) {
      const notification = fake.messageNotification(message);
      const messageId = (
        notification['entry'] as Array<{ changes: Array<{ value: { messages: Array<{ id: string }> } }> }>
      )[0]!.changes[0]!.value.messages[0]!.id;
      closed.delete(message.from);
      const post = await fake.post(notification);
      return { messageId, body: post.body, status: post.status, text: post.text };
    },
    async post(body, postOptions = {}) {
      if (!fake.webhookUrl) throw new Error('fake whatsapp: no webhook URL to post to');
      const bytes = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
      const signature = postOptions.signature === undefined ? sign(bytes) : postOptions.signature;
      const res = await fetch(fake.webhookUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'facebookexternalua',
          ...(signature === null ? {} : { 'x-hub-signature-256': signature }),
        },
        body: bytes,
      });
      const post = { body: bytes, status: res.status, text: await res.text() };
      posts.push(post);
      return post;
    },
    async get(query) {
      if (!fake.webhookUrl) throw new Error('fake whatsapp: no webhook URL');
      const res = await fetch(`${fake.webhookUrl}?${new URLSearchParams(query)}`);
      return { status: res.status, text: await res.text() };
    },
    sign,
    closeWindow: (number) => closed.add(number),
    failNext: (failure, skip = 0) => failures.push({ ...failure, skip }),
    messages: (to) => sent.filter((m) => m.to === to),
    shown: (to) => sent.filter((m) => m.to === to).map((m) => m.text),
    typing: (chat) => reads.filter((r) => r.typing && r.chat === chat).length,
    async waitFor(predicate, timeoutMs = 10_000) {
      await waitFor(() => predicate(), timeoutMs, 'a fake whatsapp condition');
    },
    async close() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
  return fake;
}
