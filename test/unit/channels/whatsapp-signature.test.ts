/** Meta's webhook signature and subscription handshake (whatsapp/signature.ts). */
import { describe, expect, it } from 'vitest';
import { handshakeChallenge, signatureOf, validSignature } from '../../../src/channels/whatsapp/signature.js';

const SECRET = 'app-secret';
const body = Buffer.from('{"object":"whatsapp_business_account","entry":[]}');

describe('validSignature', () => {
  it('takes sha256= and the HMAC of the exact bytes with the app secret (hex in either case)', () => {
    const signature = signatureOf(body, SECRET);
    expect(validSignature(body, signature, SECRET)).toBe(true);
    expect(validSignature(body, `sha256=${signature.slice(7).toUpperCase()}`, SECRET)).toBe(true);
  });

  it.each([
    ['no header', undefined],
    ['an empty header', ''],
    ['two headers', [signatureOf(body, SECRET), signatureOf(body, SECRET)]],
    ['another scheme', `sha1=${signatureOf(body, SECRET).slice(7)}`],
    ['no scheme', signatureOf(body, SECRET).slice(7)],
    ['a short signature', signatureOf(body, SECRET).slice(0, -2)],
    ['not hex', `sha256=${'z'.repeat(64)}`],
    ['another secret', signatureOf(body, 'other-secret')],
    ['another body', signatureOf(Buffer.from(`${body} `), SECRET)],
  ])('refuses %s', (_what, header) => {
    expect(validSignature(body, header as string | string[] | undefined, SECRET)).toBe(false);
  });

  it('refuses the signed body with one byte changed', () => {
    const changed = Buffer.from(body);
    changed[2] = (changed[2] ?? 0) ^ 1;
    expect(validSignature(changed, signatureOf(body, SECRET), SECRET)).toBe(false);
  });
});

describe('handshakeChallenge', () => {
  const query = (q: Record<string, string>) => new URLSearchParams(q);
  it('echoes the challenge for hub.mode=subscribe with the verify token only', () => {
    const ok = { 'hub.mode': 'subscribe', 'hub.verify_token': 'token', 'hub.challenge': '42' };
    expect(handshakeChallenge(query(ok), 'token')).toBe('42');
    expect(handshakeChallenge(query({ ...ok, 'hub.verify_token': 'tokeN' }), 'token')).toBeUndefined();
    expect(handshakeChallenge(query({ ...ok, 'hub.verify_token': 'token2' }), 'token')).toBeUndefined();
    expect(handshakeChallenge(query({ ...ok, 'hub.verify_token': '' }), 'token')).toBeUndefined();
    expect(handshakeChallenge(query({ ...ok, 'hub.mode': 'other' }), 'token')).toBeUndefined();
    expect(
      handshakeChallenge(query({ 'hub.mode': 'subscribe', 'hub.verify_token': 'token' }), 'token'),
    ).toBeUndefined();
  });
});
