/** Authentication-Results: only the receiving server's header is believed, and only a pass for the From domain. */
import { describe, expect, it } from 'vitest';
import { parseAuthResults, verifySender } from '../../../../src/channels/email/auth-results.js';

const ours = { authservId: 'mx.test', require: 'dmarc' as const, fromDomain: 'example.com' };

describe('parseAuthResults', () => {
  it('reads the authserv-id, methods, results and properties, comments and quotes included', () => {
    expect(
      parseAuthResults(
        'MX.Test 1; spf=pass (sender ok) smtp.mailfrom=example.com;\r\n dkim = pass header.d=example.com header.i="@example.com"; dmarc=pass (p=reject) header.from=example.com',
      ),
    ).toEqual({
      authservId: 'mx.test',
      results: [
        { method: 'spf', result: 'pass', props: { 'smtp.mailfrom': 'example.com' } },
        { method: 'dkim', result: 'pass', props: { 'header.d': 'example.com', 'header.i': '@example.com' } },
        { method: 'dmarc', result: 'pass', props: { 'header.from': 'example.com' } },
      ],
    });
  });

  it('takes `none` and an empty value without results', () => {
    expect(parseAuthResults('mx.test; none')).toEqual({ authservId: 'mx.test', results: [] });
    expect(parseAuthResults('')).toBeUndefined();
  });
});

describe('verifySender', () => {
  it('believes a dmarc=pass for the From domain from our authserv-id', () => {
    expect(verifySender(['mx.test; dmarc=pass header.from=example.com'], ours).ok).toBe(true);
  });

  it.each([
    ['no header at all', []],
    ['a foreign authserv-id', ['mx.attacker.example; dmarc=pass header.from=example.com']],
    ['a pass for another domain', ['mx.test; dmarc=pass header.from=attacker.example']],
    ['a dmarc fail', ['mx.test; dmarc=fail header.from=example.com']],
    ['our fail above a pass the sender wrote under our name', ['mx.test; dmarc=fail', 'mx.test; dmarc=pass']],
    ['the authserv-id inside a comment', ['(mx.test) mx.other; dmarc=pass']],
  ])('does not believe %s', (_name, headers) => {
    expect(verifySender(headers, ours).ok).toBe(false);
  });

  it('with dkim, believes a DKIM pass signed by the From domain (header.d or header.i), not another', () => {
    const dkim = { ...ours, require: 'dkim' as const };
    expect(verifySender(['mx.test; dkim=pass header.d=example.com'], dkim).ok).toBe(true);
    expect(verifySender(['mx.test; dkim=pass header.i=ann@example.com'], dkim).ok).toBe(true);
    expect(verifySender(['mx.test; dkim=pass header.d=mailer.example'], dkim).ok).toBe(false);
    // dmarc mode does not take a DKIM pass alone.
    expect(verifySender(['mx.test; dkim=pass header.d=example.com'], ours).ok).toBe(false);
  });

  it('believes everything with off, and nothing without an authserv-id', () => {
    expect(verifySender([], { ...ours, require: 'off' }).ok).toBe(true);
    expect(verifySender(['mx.test; dmarc=pass'], { ...ours, authservId: undefined }).ok).toBe(false);
  });
});
