/**
 * The few Graph API calls of the Cloud API magpie makes, with fetch (Meta's
 * Node SDK for the Cloud API is archived): send a message, upload media to
 * send (a spoken reply), mark one read
 * (with the typing indicator), look up a media id (its download URL) and
 * describe the phone number (doctor, onboard). The access token goes in the
 * Authorization header, never in a URL. A refusal is a GraphError carrying
 * the HTTP status and Meta's error code, which the sender classifies.
 */
import { AppError, describeError } from '../../errors/index.js';
import { trimRoot } from './api-root.js';

/** Meta's error body: `{ error: { message, type, code, error_subcode, error_data: { details } } }`. */
interface GraphErrorBody {
  error?: {
    message?: string;
    type?: string;
    code?: number;
    error_subcode?: number;
    error_data?: { details?: string };
  };
}

/** The Graph API refused a call (an HTTP error with Meta's error, when it sent one). */
export class GraphError extends Error {
  constructor(
    readonly status: number,
    /** Meta's error code (131047: the 24-hour window is closed; 190: the token is not valid). */
    readonly code: number | undefined,
    message: string,
    /** `error_data.details`: the longer explanation, when Meta gives one. */
    readonly details: string | undefined,
    /** Retry-After, when the answer carried one. */
    readonly retryAfterMs: number | undefined,
  ) {
    super(message);
    this.name = 'GraphError';
  }
}

/** What the media endpoint says about a media id. */
export interface MediaInfo {
  /** Where the bytes are (a short-lived URL that needs the token too). */
  url: string;
  mimeType: string | undefined;
  /** Bytes, when Meta says. */
  size: number | undefined;
}

export interface GraphClientOptions {
  /** WHATSAPP_API_ROOT, e.g. `https://graph.facebook.com/v21.0`. */
  root: string;
  /** WHATSAPP_ACCESS_TOKEN. */
  token: string;
  /** WHATSAPP_PHONE_NUMBER_ID: the business number magpie sends from. */
  phoneNumberId: string;
  /** Per-call time limit. @defaultValue 20000 */
  timeoutMs?: number;
}

/** The Cloud API calls, over fetch. */
export class GraphClient {
  readonly root: string;
  readonly token: string;
  readonly phoneNumberId: string;
  private readonly timeoutMs: number;

  constructor(options: GraphClientOptions) {
    this.root = trimRoot(options.root);
    this.token = options.token;
    this.phoneNumberId = options.phoneNumberId;
    this.timeoutMs = options.timeoutMs ?? 20_000;
  }

  /** POST /<phone number id>/messages; resolves to the new message's id (`wamid.…`). */
  async sendMessage(payload: Record<string, unknown>): Promise<string> {
    const body = (await this.call('POST', `/${this.phoneNumberId}/messages`, {
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      ...payload,
    })) as { messages?: Array<{ id?: string }> };
    return body.messages?.[0]?.id ?? '';
  }

  /**
   * POST /<phone number id>/media (multipart): uploads a file to send by id; resolves to the media id.
   * @example await graph.sendMessage({ to, type: 'audio', audio: { id: await graph.uploadMedia(ogg, 'audio/ogg', 'reply.ogg'), voice: true } })
   */
  async uploadMedia(bytes: Buffer, mimeType: string, fileName: string): Promise<string> {
    const form = new FormData();
    form.set('messaging_product', 'whatsapp');
    form.set('type', mimeType);
    form.set('file', new Blob([new Uint8Array(bytes)], { type: mimeType }), fileName);
    const body = (await this.call('POST', `/${this.phoneNumberId}/media`, form)) as { id?: unknown };
    if (typeof body.id !== 'string' || body.id === '')
      throw new GraphError(200, undefined, 'the media upload gave no id', undefined, undefined);
    return body.id;
  }

  /** Marks an incoming message read (blue ticks); with `typing`, shows the typing indicator too (up to 25 s or the next message). */
  async markRead(messageId: string, typing = false): Promise<void> {
    await this.call('POST', `/${this.phoneNumberId}/messages`, {
      messaging_product: 'whatsapp',
      status: 'read',
      message_id: messageId,
      ...(typing ? { typing_indicator: { type: 'text' } } : {}),
    });
  }

  /** GET /<media id>: where a received image, voice note or file can be downloaded (with the token). */
  async media(mediaId: string): Promise<MediaInfo> {
    const body = (await this.call(
      'GET',
      `/${encodeURIComponent(mediaId)}?phone_number_id=${encodeURIComponent(this.phoneNumberId)}`,
    )) as { url?: unknown; mime_type?: unknown; file_size?: unknown };
    if (typeof body.url !== 'string' || body.url === '')
      throw new GraphError(200, undefined, 'the media lookup gave no URL', undefined, undefined);
    return {
      url: body.url,
      mimeType: typeof body.mime_type === 'string' ? body.mime_type : undefined,
      size: typeof body.file_size === 'number' ? body.file_size : Number(body.file_size) || undefined,
    };
  }

  /** GET /<phone number id>: the number and its verified name (a valid token for this number passes). */
  async phoneNumber(signal?: AbortSignal): Promise<{ number: string; name: string }> {
    const body = (await this.call(
      'GET',
      `/${encodeURIComponent(this.phoneNumberId)}?fields=display_phone_number,verified_name`,
      undefined,
      signal,
    )) as { display_phone_number?: string; verified_name?: string };
    return { number: body.display_phone_number ?? '?', name: body.verified_name ?? '' };
  }

  /** One call: JSON (or a form) in, JSON out; a non-2xx answer is a GraphError, a network failure fetch's own error. */
  private async call(
    method: 'GET' | 'POST',
    path: string,
    json?: unknown,
    signal?: AbortSignal,
  ): Promise<unknown> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const form = json instanceof FormData;
    const res = await fetch(`${this.root}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.token}`,
        ...(json === undefined || form ? {} : { 'content-type': 'application/json' }),
      },
      ...(json === undefined ? {} : { body: form ? json : JSON.stringify(json) }),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    const text = await res.text();
    let body: unknown;
    try {
      body = text === '' ? {} : JSON.parse(text);
    } catch {
      body = {};
    }
    if (res.ok) return body;
    const error = (body as GraphErrorBody).error ?? {};
    const retryAfter = Number(res.headers.get('retry-after') ?? Number.NaN);
    throw new GraphError(
      res.status,
      typeof error.code === 'number' ? error.code : undefined,
      error.message ?? `HTTP ${res.status}`,
      error.error_data?.details,
      Number.isFinite(retryAfter) ? Math.max(0, retryAfter * 1000) : undefined,
    );
  }
}

/** A one-line account of a failed call (Meta's code and message), for logs and notes. */
export function graphFailure(err: unknown): string {
  if (err instanceof GraphError)
    return `HTTP ${err.status}${err.code === undefined ? '' : `, code ${err.code}`}: ${err.message}`;
  if (err instanceof AppError) return err.message;
  return describeError(err);
}
