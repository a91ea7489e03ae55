/**
 * Meta's webhook authentication. Every POST carries `X-Hub-Signature-256:
 * sha256=<hex>`, the HMAC-SHA256 of the raw body with the app secret: it is
 * recomputed over the bytes as received and compared in constant time
 * (`timingSafeEqual`); anything else — no header, another scheme, a
 * signature of other bytes — is refused. The subscription handshake (a GET
 * with `hub.mode=subscribe`, `hub.verify_token`, `hub.challenge`) is
 * answered with the challenge only when the token is the configured one,
 * compared in constant time as well.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** The header Meta signs POSTs with (lower-case, as Node gives headers). */
export const SIGNATURE_HEADER = 'x-hub-signature-256';

/** Whether `header` is `sha256=` and the HMAC-SHA256 of `body` with `appSecret`. */
export function validSignature(
  body: Buffer,
  header: string | string[] | undefined,
  appSecret: string,
): boolean {
  if (typeof header !== 'string') return false;
  const match = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!match) return false;
  const expected = createHmac('sha256', appSecret).update(body).digest();
  const given = Buffer.from(match[1]!, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** `sha256=<hex>` for `body`: what Meta sends (the fake and tests sign with it). */
export function signatureOf(body: Buffer | string, appSecret: string): string {
  return `sha256=${createHmac('sha256', appSecret).update(body).digest('hex')}`;
}

/**
 * The challenge to echo for a subscription handshake, or undefined when the request is not one
 * with the right verify token.
 */
export function handshakeChallenge(query: URLSearchParams, verifyToken: string): string | undefined {
  if (query.get('hub.mode') !== 'subscribe') return undefined;
  const challenge = query.get('hub.challenge');
  if (!challenge || challenge.length > 1024) return undefined;
  return sameText(query.get('hub.verify_token') ?? '', verifyToken) ? challenge : undefined;
}

/** Equal strings, in time that does not depend on where they differ (their hashes compared). */
function sameText(a: string, b: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(a), digest(b)) && a.length === b.length;
}
