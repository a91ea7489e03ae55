/**
 * `magpie doctor`'s look at the certificates of TLS to Redis: the one Redis showed, and
 * magpie's own client certificate (REDIS_TLS_CERT). An expired one stops the bus (every
 * connection refused); one that expires within {@link RENEW_WITHIN_DAYS} is warned of, with
 * its date, while there is time to renew it.
 */
import { X509Certificate } from 'node:crypto';
import type { ServerCertificate } from '../bus/redis.js';
import { type CheckResult, failed, pass, warned } from './doctor.js';

/** Warn this many days before a certificate expires. */
export const RENEW_WITHIN_DAYS = 14;

const DAY_MS = 24 * 60 * 60 * 1000;

/** One result per certificate in use: Redis's (when it showed one) and the client certificate's (when set). */
export function tlsCertificateResults(
  server: ServerCertificate | undefined,
  clientPem: string | undefined,
  now: Date,
): CheckResult[] {
  const results: CheckResult[] = [];
  if (server) {
    results.push(
      judged(
        `Redis's certificate (${server.name})`,
        server.validTo,
        now,
        "renew the Redis server's certificate",
      ),
    );
  }
  if (clientPem) {
    const client = new X509Certificate(clientPem);
    results.push(
      judged(
        "magpie's client certificate (REDIS_TLS_CERT)",
        new Date(client.validTo),
        now,
        'issue magpie a new client certificate from the CA Redis trusts and point REDIS_TLS_CERT and REDIS_TLS_KEY at it',
      ),
    );
  }
  return results;
}

function judged(what: string, validTo: Date, now: Date, fix: string): CheckResult {
  const date = validTo.toISOString().slice(0, 10);
  const days = Math.floor((validTo.getTime() - now.getTime()) / DAY_MS);
  if (validTo.getTime() <= now.getTime()) return failed(`TLS: ${what} expired on ${date}`, fix);
  const line = `TLS: ${what} valid until ${date} (${days} day${days === 1 ? '' : 's'})`;
  if (days < RENEW_WITHIN_DAYS) return warned(`${line}: renew it before then`, fix);
  return pass(line);
}
