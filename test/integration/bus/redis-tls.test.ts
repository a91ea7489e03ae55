/**
 * TLS to Redis (`rediss://`), against redis-servers that serve TLS only, with certificates
 * of the test's own CA: REDIS_TLS_CA trusts that CA instead of the public ones,
 * REDIS_TLS_CERT and REDIS_TLS_KEY are the client certificate a Redis with
 * `tls-auth-clients yes` asks for. Every connection of a daemon (producers, BullMQ's
 * workers and their blocking duplicates, the CLI's subscriber) goes over it, so a whole
 * CLI turn is the test. What is refused — a server whose certificate another CA signed or
 * names another host, no or a stranger's client certificate, plain text to a TLS port —
 * is refused at once with one line saying what to set, never sent in the clear.
 */
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { Bus } from '../../../src/bus/bus.js';
import { sendAndWait } from '../../../src/channels/cli/client.js';
import { silentLogger } from '../../../src/log/index.js';
import { freePort, type RedisHandle, startRedis } from '../../fakes/redis-server.js';
import { rejectedWith } from '../../fakes/rejection.js';
import {
  clientTlsEnv,
  makeTestCertificates,
  redisTlsArgs,
  type TestCertificates,
} from '../../fakes/tls-certs.js';
import { busConnector, cleanupsAfterEach, ScriptedAgent, startCliStack } from './helpers.js';

let certs: TestCertificates;
/** Asks every client for a certificate its CA signed. */
let mutual: RedisHandle;
/** Asks for none. */
let serverOnly: RedisHandle;
/** Its certificate is for redis.example, not 127.0.0.1. */
let otherHost: RedisHandle;
let workspace: string;

async function tlsRedis(clientCerts: 'yes' | 'no', server?: { cert: string; key: string }) {
  const port = await freePort();
  return startRedis({ port, args: redisTlsArgs(certs, port, clientCerts, server) });
}

beforeAll(async () => {
  certs = await makeTestCertificates();
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-tls-workspace-'));
  [mutual, serverOnly, otherHost] = await Promise.all([
    tlsRedis('yes'),
    tlsRedis('no'),
    tlsRedis('no', { cert: certs.otherHostCert, key: certs.otherHostKey }),
  ]);
}, 30_000);
afterAll(async () => {
  await Promise.all([mutual, serverOnly, otherHost].map((r) => r?.stop()));
  certs?.remove();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

const cleanups = cleanupsAfterEach();
const connect = busConnector(cleanups);

function config(redis: RedisHandle, env: Record<string, string>, scheme = 'rediss') {
  return parseConfig({
    REDIS_URL: `${scheme}://127.0.0.1:${redis.port}`,
    MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
    MAGPIE_WORKSPACE: workspace,
    ...env,
  });
}

/** Bus.connect's refusal, as the one line a command prints. */
async function refusal(cfg: ReturnType<typeof config>): Promise<string> {
  const error = await rejectedWith(Error, Bus.connect({ config: cfg, logger: silentLogger() }));
  expect(error).toMatchObject({ code: 'REDIS_UNAVAILABLE' });
  return error.message;
}

describe('TLS to Redis', () => {
  it('answers a CLI turn over TLS with a private CA and a client certificate', async () => {
    const cfg = config(mutual, clientTlsEnv(certs));
    const agent = new ScriptedAgent();
    await startCliStack(connect, cfg, cleanups, { agent, concurrency: 2 });
    const client = await connect(cfg);
    const reply = await sendAndWait(client, { content: 'over tls', chatId: 'tls-1', timeoutMs: 10_000 });
    expect(reply.content).toBe('over tls');
    expect(agent.turns.map((t) => t.contents)).toEqual([['over tls']]);
    // Every connection went over TLS: the server has no plain port to take one.
    expect(await client.redis.call('CONFIG', 'GET', 'port')).toEqual(['port', '0']);
  }, 30_000);

  it('trusts only the CA REDIS_TLS_CA names: a server certificate another CA signed is refused', async () => {
    const message = await refusal(config(serverOnly, { REDIS_TLS_CA: certs.otherCa }));
    expect(message).toMatch(
      /^Redis at rediss:\/\/127\.0\.0\.1:\d+\/? is unreachable: self-signed certificate in certificate chain \(its certificate is not signed by a CA magpie trusts: REDIS_TLS_CA names the PEM file of the CA that signed it\)$/,
    );
  });

  it("refuses a server without REDIS_TLS_CA when its CA is not one of Node's public ones", async () => {
    const message = await refusal(config(serverOnly, {}));
    expect(message).toContain('REDIS_TLS_CA names the PEM file of the CA that signed it');
  });

  it('refuses a certificate the trusted CA signed for another host', async () => {
    const message = await refusal(config(otherHost, { REDIS_TLS_CA: certs.ca }));
    expect(message).toContain(
      "Hostname/IP does not match certificate's altnames: IP: 127.0.0.1 is not in the cert's list",
    );
    expect(message).toContain(
      'its certificate is for another host: connect by a name or address it lists, or name one in REDIS_TLS_SERVERNAME',
    );
  });

  it('takes the name the certificate holds from REDIS_TLS_SERVERNAME, and only that name', async () => {
    const bus = await connect(
      config(otherHost, { REDIS_TLS_CA: certs.ca, REDIS_TLS_SERVERNAME: 'redis.example' }),
    );
    expect(await bus.redis.ping()).toBe('PONG');
    const message = await refusal(
      config(otherHost, { REDIS_TLS_CA: certs.ca, REDIS_TLS_SERVERNAME: 'other.example' }),
    );
    expect(message).toContain("Hostname/IP does not match certificate's altnames: Host: other.example.");
  });

  it('says a client certificate is needed when the server asks for one and none is set', async () => {
    const message = await refusal(config(mutual, { REDIS_TLS_CA: certs.ca }));
    expect(message).toMatch(/client certificate.*REDIS_TLS_CERT and REDIS_TLS_KEY/);
  });

  it("is refused by a server whose CA did not sign magpie's client certificate", async () => {
    const message = await refusal(
      config(mutual, {
        REDIS_TLS_CA: certs.ca,
        REDIS_TLS_CERT: certs.strangerCert,
        REDIS_TLS_KEY: certs.strangerKey,
      }),
    );
    expect(message).toMatch(/^Redis at rediss:\/\/127\.0\.0\.1:\d+\/? is unreachable: /);
    expect(message).toMatch(/client certificate/);
  });

  it('tells a plain redis:// URL pointed at a TLS port to use rediss://', async () => {
    const message = await refusal(config(serverOnly, {}, 'redis'));
    expect(message).toMatch(/\(if it serves TLS on that port, the URL must be rediss:\/\/\)$/);
  });

  it('keeps the client key out of the workspace, also reached through a link', () => {
    const inside = path.join(workspace, 'redis.key');
    copyFileSync(certs.clientKey, inside);
    const link = path.join(os.tmpdir(), `magpie-key-link-${randomUUID()}`);
    symlinkSync(workspace, link);
    try {
      expect(config(mutual, clientTlsEnv(certs)).redis.tls?.key).toContain('PRIVATE KEY');
      for (const key of [inside, path.join(link, 'redis.key')]) {
        expect(() => config(mutual, { ...clientTlsEnv(certs), REDIS_TLS_KEY: key })).toThrow(
          /^REDIS_TLS_KEY .* is inside the workspace .*, where the assistant's tools could read it: keep it outside, e\.g\. beside \.env$/,
        );
      }
    } finally {
      rmSync(link, { force: true });
      rmSync(inside, { force: true });
    }
  });
});
