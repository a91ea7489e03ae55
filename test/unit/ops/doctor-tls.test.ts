/** doctor's TLS certificate lines: valid, expiring within 14 days (warned with the date), expired (failed). */

import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tlsCertificateResults } from '../../../src/ops/doctor-tls.js';
import { makeTestCertificates, type TestCertificates } from '../../fakes/tls-certs.js';

const DAY = 24 * 60 * 60 * 1000;

describe("doctor's TLS certificate check", () => {
  let certs: TestCertificates;
  let clientPem: string;
  let validTo: Date;
  beforeAll(async () => {
    certs = await makeTestCertificates();
    clientPem = readFileSync(certs.clientCert, 'utf8');
    validTo = new Date(new X509Certificate(clientPem).validTo);
  });
  afterAll(() => certs?.remove());

  const date = () => validTo.toISOString().slice(0, 10);
  const server = () => ({ validTo, name: 'redis.internal' });

  it('passes a certificate with more than 14 days left', () => {
    const now = new Date(validTo.getTime() - 30 * DAY - 60_000);
    expect(tlsCertificateResults(server(), clientPem, now)).toEqual([
      { status: 'ok', detail: `TLS: Redis's certificate (redis.internal) valid until ${date()} (30 days)` },
      {
        status: 'ok',
        detail: `TLS: magpie's client certificate (REDIS_TLS_CERT) valid until ${date()} (30 days)`,
      },
    ]);
  });

  it('warns of one that expires within 14 days, with its date and how to renew it', () => {
    const now = new Date(validTo.getTime() - DAY - 60_000);
    const [redis, client] = tlsCertificateResults(server(), clientPem, now);
    expect(redis).toEqual({
      status: 'warn',
      detail: `TLS: Redis's certificate (redis.internal) valid until ${date()} (1 day): renew it before then`,
      fix: "renew the Redis server's certificate",
    });
    expect(client).toMatchObject({
      status: 'warn',
      fix: expect.stringMatching(/^issue magpie a new client certificate/),
    });
  });

  it('fails an expired one: Redis refuses every connection then', () => {
    const now = new Date(validTo.getTime() + 1_000);
    expect(tlsCertificateResults(server(), clientPem, now).map((r) => [r.status, r.detail])).toEqual([
      ['fail', `TLS: Redis's certificate (redis.internal) expired on ${date()}`],
      ['fail', `TLS: magpie's client certificate (REDIS_TLS_CERT) expired on ${date()}`],
    ]);
  });

  it('says nothing without TLS', () => {
    expect(tlsCertificateResults(undefined, undefined, new Date())).toEqual([]);
  });
});
