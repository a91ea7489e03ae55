/**
 * The `/webhooks/whatsapp` route: Meta's subscription handshake (GET,
 * answered with the challenge only for the verify token) and its
 * notifications (POST, believed only with a valid `X-Hub-Signature-256` over
 * the raw body: 401 otherwise, and nothing in it is read). A verified
 * notification is handed to the channel, and the answer says what became of
 * it: 200 once it is all taken, 503 when it could not be (Redis away, the
 * channel stopping), so Meta delivers it again; malformed JSON is a 400.
 */
import { describeError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { WebhookHandler } from '../webhooks.js';
import type { WaNotification } from './inbound.js';
import { handshakeChallenge, SIGNATURE_HEADER, validSignature } from './signature.js';

export interface WhatsAppWebhookOptions {
  /** WHATSAPP_APP_SECRET: what every POST is signed with. */
  appSecret: string;
  /** WHATSAPP_VERIFY_TOKEN: what the subscription handshake must bring. */
  verifyToken: string;
  logger: Logger;
  /** A warning strangers could repeat (a forged POST, a wrong handshake), logged sparingly by the caller. */
  warn(kind: string, text: string): void;
  /** Takes a verified notification: resolves once all of it is on the bus (or decided against). */
  take(body: WaNotification): Promise<void>;
}

/** The route's handler. */
export function whatsappWebhook(options: WhatsAppWebhookOptions): WebhookHandler {
  return async (request) => {
    if (request.method === 'GET') {
      const challenge = handshakeChallenge(request.url.searchParams, options.verifyToken);
      if (challenge === undefined) {
        options.warn(
          'handshake',
          'whatsapp webhook verification refused: hub.verify_token is not WHATSAPP_VERIFY_TOKEN',
        );
        return { status: 403, body: 'forbidden' };
      }
      options.logger.info('whatsapp webhook verified by Meta');
      return { status: 200, body: challenge };
    }
    if (request.method !== 'POST') return { status: 405, body: 'method not allowed' };
    if (!validSignature(request.body, request.headers[SIGNATURE_HEADER], options.appSecret)) {
      options.warn(
        'signature',
        'whatsapp webhook refused: no valid X-Hub-Signature-256 (is WHATSAPP_APP_SECRET the secret of the app that sends it?)',
      );
      return { status: 401, body: 'invalid signature' };
    }
    let body: unknown;
    try {
      body = JSON.parse(request.body.toString('utf8'));
    } catch {
      return { status: 400, body: 'malformed JSON' };
    }
    if (!body || typeof body !== 'object' || Array.isArray(body))
      return { status: 400, body: 'not an object' };
    try {
      await options.take(body as WaNotification);
      return { status: 200, body: 'ok' };
    } catch (err) {
      options.logger.warn(
        { err: describeError(err) },
        'whatsapp webhook not taken (bus away?): answered 503 for Meta to deliver it again',
      );
      return { status: 503, body: 'try again later' };
    }
  };
}
