/** REDIS_SENTINELS, REDIS_CLUSTER_NODES, REDIS_PASSWORD, REDIS_TLS_* and MAGPIE_REDIS_MIN_REPLICAS: parsed, refused in one line, redacted. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { secretValues } from '../../../src/config/secrets.js';
import { configRefusal } from '../../fakes/config.js';
import { makeTestCertificates, type TestCertificates } from '../../fakes/tls-certs.js';

const base = { MAGPIE_WORKSPACE: '/tmp/ws', MAGPIE_STATE_DIR: '/tmp/state-outside' };

describe('Redis Sentinel settings', () => {
  it('reads the Sentinels, the name, and the password, TLS and database from REDIS_URL', () => {
    const config = parseConfig({
      ...base,
      REDIS_URL: 'rediss://app:p%40ss@ignored/2',
      REDIS_SENTINELS: '10.0.0.1:26379, sentinel-b:26380,[::1]:26381',
      REDIS_SENTINEL_NAME: 'bus',
      MAGPIE_REDIS_MIN_REPLICAS: '1',
      MAGPIE_REDIS_WAIT_TIMEOUT: '250ms',
    });
    expect(config.redis.sentinel).toEqual({
      sentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: 'sentinel-b', port: 26380 },
        { host: '::1', port: 26381 },
      ],
      name: 'bus',
      sentinelPassword: undefined,
      username: 'app',
      password: 'p@ss',
      tls: {},
      db: 2,
    });
    expect(config.redis).toMatchObject({ minReplicas: 1, waitTimeoutMs: 250 });
  });

  it('defaults: no Sentinel, name mymaster, no WAIT', () => {
    const config = parseConfig({ ...base, REDIS_URL: 'redis://127.0.0.1:6379' });
    expect(config.redis).toMatchObject({ sentinel: undefined, minReplicas: 0, waitTimeoutMs: 1_000 });
    expect(parseConfig({ ...base, REDIS_SENTINELS: '127.0.0.1:26379' }).redis.sentinel?.name).toBe(
      'mymaster',
    );
  });

  it('puts REDIS_PASSWORD into REDIS_URL and into the secrets', () => {
    const config = parseConfig({
      ...base,
      REDIS_URL: 'redis://10.0.0.5:6379',
      REDIS_PASSWORD: 'hunter2-long',
      REDIS_SENTINELS: '10.0.0.1:26379',
      REDIS_SENTINEL_PASSWORD: 'sentinel-secret',
    });
    expect(config.redis.url).toBe('redis://:hunter2-long@10.0.0.5:6379');
    expect(secretValues(config)).toEqual(expect.arrayContaining(['hunter2-long', 'sentinel-secret']));
  });

  it.each([
    [{ REDIS_SENTINELS: '10.0.0.1' }, /^REDIS_SENTINELS entry "10.0.0.1" is not host:port/],
    [{ REDIS_SENTINELS: '10.0.0.1:26379,:1' }, /^REDIS_SENTINELS entry ":1" is not host:port/],
    [{ REDIS_SENTINELS: 'a:70000' }, /^REDIS_SENTINELS entry "a:70000"/],
    [{ REDIS_SENTINELS: 'a:1', REDIS_SENTINEL_NAME: 'my master' }, /^REDIS_SENTINEL_NAME may hold only/],
    [{ MAGPIE_REDIS_MIN_REPLICAS: '-1' }, /^MAGPIE_REDIS_MIN_REPLICAS "-1" must be a whole number/],
    [{ MAGPIE_REDIS_WAIT_TIMEOUT: '0' }, /^MAGPIE_REDIS_WAIT_TIMEOUT /],
    [
      { REDIS_URL: 'redis://:pw-one-x@h:6379', REDIS_PASSWORD: 'pw-two-x' },
      /^REDIS_URL holds a password and REDIS_PASSWORD is set too/,
    ],
    [
      { REDIS_PASSWORD: 'pw-two-x' },
      /^REDIS_PASSWORD is set but none of REDIS_URL, REDIS_SENTINELS and REDIS_CLUSTER_NODES/,
    ],
  ])('refuses %j in one line (exit 2), without echoing a password', (env, message) => {
    const err = configRefusal({ ...base, ...env });
    expect(err.message).toMatch(message);
    expect(err.message).not.toContain('\n');
    expect(err.message).not.toMatch(/pw-one-x|pw-two-x/);
    expect(err.exitCode).toBe(2);
  });
});

describe('Redis Cluster settings', () => {
  it('reads the nodes, the credentials and TLS from REDIS_URL, and hash-tags the prefix', () => {
    const config = parseConfig({
      ...base,
      REDIS_URL: 'rediss://app:p%40ss@ignored',
      REDIS_CLUSTER_NODES: '10.0.0.1:6379, redis-b:6380,[::1]:6381',
      MAGPIE_QUEUE_PREFIX: 'bus',
    });
    expect(config.redis.cluster).toEqual({
      nodes: [
        { host: '10.0.0.1', port: 6379 },
        { host: 'redis-b', port: 6380 },
        { host: '::1', port: 6381 },
      ],
      username: 'app',
      password: 'p@ss',
      tls: {},
    });
    expect(config.redis.prefix).toBe('{bus}');
    expect(config.redis.sentinel).toBeUndefined();
  });

  it('takes MAGPIE_REDIS_MIN_REPLICAS with a Cluster (WAIT goes to the master serving the slot)', () => {
    const config = parseConfig({ ...base, REDIS_CLUSTER_NODES: 'a:6379', MAGPIE_REDIS_MIN_REPLICAS: '1' });
    expect(config.redis.minReplicas).toBe(1);
  });

  it('keeps the plain prefix without a Cluster (no migration of an existing bus)', () => {
    expect(parseConfig({ ...base, REDIS_URL: 'redis://127.0.0.1:6379' }).redis).toMatchObject({
      cluster: undefined,
      prefix: 'magpie',
    });
    expect(parseConfig({ ...base, REDIS_SENTINELS: '127.0.0.1:26379' }).redis.prefix).toBe('magpie');
    expect(parseConfig({ ...base, REDIS_CLUSTER_NODES: '127.0.0.1:7000' }).redis.prefix).toBe('{magpie}');
  });

  it('takes REDIS_PASSWORD alone and keeps it among the secrets', () => {
    const config = parseConfig({
      ...base,
      REDIS_CLUSTER_NODES: '127.0.0.1:7000',
      REDIS_PASSWORD: 'cluster-pw-x',
    });
    expect(config.redis.cluster?.password).toBe('cluster-pw-x');
    expect(secretValues(config)).toContain('cluster-pw-x');
  });

  it.each([
    [
      { REDIS_CLUSTER_NODES: '10.0.0.1' },
      /^REDIS_CLUSTER_NODES entry "10.0.0.1" is not host:port \(expected e.g. 10.0.0.1:6379,/,
    ],
    [{ REDIS_CLUSTER_NODES: '10.0.0.1:6379,' }, /^REDIS_CLUSTER_NODES entry "" is not host:port/],
    [{ REDIS_CLUSTER_NODES: 'a:0' }, /^REDIS_CLUSTER_NODES entry "a:0"/],
    [{ REDIS_CLUSTER_NODES: 'a b:6379' }, /^REDIS_CLUSTER_NODES entry "a b:6379"/],
    [
      { REDIS_CLUSTER_NODES: 'a:6379', REDIS_SENTINELS: 'a:26379' },
      /^REDIS_CLUSTER_NODES and REDIS_SENTINELS are both set/,
    ],
    [
      { REDIS_CLUSTER_NODES: 'a:6379', REDIS_URL: 'redis://:pw-one-x@ignored/3' },
      /^REDIS_URL names a database other than 0, and a Redis Cluster has only database 0$/,
    ],
  ])('refuses %j in one line (exit 2), without echoing a password', (env, message) => {
    const err = configRefusal({ ...base, ...env });
    expect(err.message).toMatch(message);
    expect(err.message).not.toContain('\n');
    expect(err.message).not.toMatch(/pw-one-x/);
    expect(err.exitCode).toBe(2);
  });
});

describe('TLS to Redis: REDIS_TLS_CA, REDIS_TLS_CERT, REDIS_TLS_KEY', () => {
  let certs: TestCertificates;
  let dir: string;
  beforeAll(async () => {
    certs = await makeTestCertificates();
    dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-tls-settings-'));
    writeFileSync(path.join(dir, 'not-pem.txt'), 'hello\n');
    execFileSync('openssl', [
      'pkey',
      '-in',
      certs.clientKey,
      '-aes256',
      '-passout',
      'pass:secret',
      '-out',
      path.join(dir, 'encrypted.key'),
    ]);
  });
  afterAll(() => {
    certs?.remove();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('reads each PEM file once into the settings of every kind of Redis, and keeps the key among the secrets', () => {
    const env = {
      ...base,
      REDIS_URL: 'rediss://:pw-tls-x@redis.internal:6380',
      REDIS_TLS_CA: certs.ca,
      REDIS_TLS_CERT: certs.clientCert,
      REDIS_TLS_KEY: certs.clientKey,
    };
    const tls = {
      ca: readFileSync(certs.ca, 'utf8'),
      cert: readFileSync(certs.clientCert, 'utf8'),
      key: readFileSync(certs.clientKey, 'utf8'),
    };
    expect(parseConfig(env).redis.tls).toEqual(tls);
    expect(parseConfig({ ...env, REDIS_SENTINELS: '10.0.0.1:26379' }).redis.sentinel?.tls).toEqual(tls);
    expect(parseConfig({ ...env, REDIS_CLUSTER_NODES: '10.0.0.1:6379' }).redis.cluster?.tls).toEqual(tls);
    expect(secretValues(parseConfig(env))).toContain(tls.key);
    expect(
      parseConfig({ ...base, REDIS_URL: 'rediss://10.0.0.5:6380', REDIS_TLS_SERVERNAME: 'redis.internal' })
        .redis.tls,
    ).toEqual({ servername: 'redis.internal' });
    // rediss:// alone: TLS with Node's public CAs, no client certificate.
    expect(parseConfig({ ...base, REDIS_URL: 'rediss://redis.example:6380' }).redis.tls).toEqual({});
    expect(parseConfig({ ...base, REDIS_URL: 'redis://127.0.0.1:6379' }).redis.tls).toBeUndefined();
  });

  it.each([
    [
      () => ({ REDIS_URL: 'redis://127.0.0.1:6379', REDIS_TLS_CA: certs.ca }),
      /^REDIS_TLS_CA is set but REDIS_URL is not rediss:\/\/: TLS to Redis is turned on by a rediss:\/\/ REDIS_URL/,
    ],
    [
      () => ({
        REDIS_SENTINELS: '10.0.0.1:26379',
        REDIS_TLS_CERT: certs.clientCert,
        REDIS_TLS_KEY: certs.clientKey,
      }),
      /^REDIS_TLS_CERT is set but REDIS_URL is not rediss:\/\//,
    ],
    [
      () => ({ REDIS_URL: 'redis://h:1', REDIS_TLS_SERVERNAME: 'redis.internal' }),
      /^REDIS_TLS_SERVERNAME is set but REDIS_URL is not rediss:\/\//,
    ],
    [
      () => ({ REDIS_URL: 'rediss://h:1', REDIS_TLS_SERVERNAME: 'redis internal' }),
      /^REDIS_TLS_SERVERNAME must be a host name such as redis.internal: fix it in .env/,
    ],
    [
      () => ({ REDIS_URL: 'rediss://h:1', REDIS_TLS_CERT: certs.clientCert }),
      /^REDIS_TLS_CERT is set but REDIS_TLS_KEY is not: a client certificate needs both$/,
    ],
    [
      () => ({ REDIS_URL: 'rediss://h:1', REDIS_TLS_KEY: certs.clientKey }),
      /^REDIS_TLS_KEY is set but REDIS_TLS_CERT is not: a client certificate needs both$/,
    ],
    [
      () => ({ REDIS_URL: 'rediss://h:1', REDIS_TLS_CA: path.join(dir, 'missing.pem') }),
      /^REDIS_TLS_CA \/.*missing\.pem cannot be read \(ENOENT\): name a PEM file$/,
    ],
    [
      () => ({ REDIS_URL: 'rediss://h:1', REDIS_TLS_CA: dir }),
      /^REDIS_TLS_CA \/.* cannot be read \(EISDIR\): name a PEM file$/,
    ],
    [
      () => ({ REDIS_URL: 'rediss://h:1', REDIS_TLS_CA: path.join(dir, 'not-pem.txt') }),
      /^REDIS_TLS_CA \/.*not-pem\.txt does not hold PEM certificates$/,
    ],
    [
      () => ({ REDIS_URL: 'rediss://h:1', REDIS_TLS_CA: certs.clientKey }),
      /^REDIS_TLS_CA \/.* does not hold PEM certificates$/,
    ],
    [
      () => ({
        REDIS_URL: 'rediss://h:1',
        REDIS_TLS_CERT: certs.clientCert,
        REDIS_TLS_KEY: certs.clientCert,
      }),
      /^REDIS_TLS_KEY \/.* does not hold an unencrypted PEM private key$/,
    ],
    [
      () => ({
        REDIS_URL: 'rediss://h:1',
        REDIS_TLS_CERT: certs.clientCert,
        REDIS_TLS_KEY: path.join(dir, 'encrypted.key'),
      }),
      /^REDIS_TLS_KEY \/.*encrypted\.key does not hold an unencrypted PEM private key$/,
    ],
    [
      () => ({ REDIS_URL: 'rediss://h:1', REDIS_TLS_CERT: certs.clientCert, REDIS_TLS_KEY: certs.serverKey }),
      /^REDIS_TLS_KEY \/.*redis-server\.key is not the key of the certificate REDIS_TLS_CERT names: give the pair that belongs together$/,
    ],
  ])('refuses a bad TLS setting in one line (exit 2): %#', (env, message) => {
    const err = configRefusal({ ...base, ...env() });
    expect(err.message).toMatch(message);
    expect(err.message).not.toContain('\n');
    expect(err.exitCode).toBe(2);
  });
});
