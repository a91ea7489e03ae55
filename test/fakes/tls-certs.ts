/**
 * Certificates for tests of TLS to Redis, made with the openssl command line: a CA of
 * the test's own, a server certificate it signed for 127.0.0.1 (and localhost), one it
 * signed for another host, a client certificate it signed, and a second CA with a client
 * certificate of its own (a chain that does not lead to the CA the other side trusts).
 * Every file is PEM, in one folder.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { RedisOptions } from 'ioredis';

const run = promisify(execFile);

export interface TestCertificates {
  dir: string;
  /** The CA that signed the server's and the client's certificates. */
  ca: string;
  /** A CA that signed neither. */
  otherCa: string;
  serverCert: string;
  serverKey: string;
  /** Signed by `ca` for redis.example only: not for 127.0.0.1. */
  otherHostCert: string;
  otherHostKey: string;
  clientCert: string;
  clientKey: string;
  /** A client certificate `otherCa` signed. */
  strangerCert: string;
  strangerKey: string;
  remove(): void;
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

async function selfSignedCa(dir: string, name: string): Promise<{ cert: string; key: string }> {
  const cert = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  await run('openssl', [
    'req',
    '-x509',
    ...EC,
    '-keyout',
    key,
    '-out',
    cert,
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
  ]);
  return { cert, key };
}

async function signed(
  dir: string,
  name: string,
  ca: { cert: string; key: string },
  extensions: string,
): Promise<{ cert: string; key: string }> {
  const cert = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  const request = path.join(dir, `${name}.csr`);
  const ext = path.join(dir, `${name}.ext`);
  writeFileSync(ext, extensions);
  await run('openssl', ['req', ...EC, '-keyout', key, '-out', request, '-subj', `/CN=${name}`]);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    request,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    '-CAcreateserial',
    '-out',
    cert,
    '-days',
    '2',
    '-extfile',
    ext,
  ]);
  return { cert, key };
}

/** A fresh set of certificates in a temporary folder (`remove()` deletes it). */
export async function makeTestCertificates(): Promise<TestCertificates> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-tls-'));
  const ca = await selfSignedCa(dir, 'magpie-test-ca');
  const other = await selfSignedCa(dir, 'magpie-other-ca');
  // Redis uses its server certificate as a client too (replication, the Cluster bus): both usages.
  const server = await signed(
    dir,
    'redis-server',
    ca,
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n',
  );
  const otherHost = await signed(
    dir,
    'redis-example',
    ca,
    'subjectAltName=DNS:redis.example\nextendedKeyUsage=serverAuth\n',
  );
  const client = await signed(dir, 'magpie-client', ca, 'extendedKeyUsage=clientAuth\n');
  const stranger = await signed(dir, 'stranger-client', other, 'extendedKeyUsage=clientAuth\n');
  return {
    dir,
    ca: ca.cert,
    otherCa: other.cert,
    serverCert: server.cert,
    serverKey: server.key,
    otherHostCert: otherHost.cert,
    otherHostKey: otherHost.key,
    clientCert: client.cert,
    clientKey: client.key,
    strangerCert: stranger.cert,
    strangerKey: stranger.key,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * redis-server arguments that serve TLS only (no plain port) with `certs`: `clientCerts`
 * 'yes' refuses a client without a certificate the CA signed, 'no' asks for none.
 */
export function redisTlsArgs(
  certs: TestCertificates,
  port: number,
  clientCerts: 'yes' | 'no',
  server: { cert: string; key: string } = { cert: certs.serverCert, key: certs.serverKey },
): string[] {
  return [
    '--port',
    '0',
    '--tls-port',
    String(port),
    '--tls-cert-file',
    server.cert,
    '--tls-key-file',
    server.key,
    '--tls-ca-cert-file',
    certs.ca,
    '--tls-auth-clients',
    clientCerts,
  ];
}

/** ioredis's TLS options for a client of servers started with `certs`: their CA, the client certificate. */
export function clientTls(certs: TestCertificates): RedisOptions['tls'] {
  return {
    ca: readFileSync(certs.ca, 'utf8'),
    cert: readFileSync(certs.clientCert, 'utf8'),
    key: readFileSync(certs.clientKey, 'utf8'),
  };
}

/** REDIS_TLS_CA, REDIS_TLS_CERT and REDIS_TLS_KEY for a client of servers started with `certs`. */
export function clientTlsEnv(certs: TestCertificates): Record<string, string> {
  return { REDIS_TLS_CA: certs.ca, REDIS_TLS_CERT: certs.clientCert, REDIS_TLS_KEY: certs.clientKey };
}
