/**
 * Sentinel over TLS: a master, a replica and three Sentinels that serve TLS only and ask
 * every client for a certificate the test CA signed. magpie asks the Sentinels and talks to
 * the master over TLS with REDIS_TLS_CA, REDIS_TLS_CERT and REDIS_TLS_KEY (`rediss://` in
 * REDIS_URL turns it on; its host is not used), answers a CLI turn, and after the master's
 * SIGKILL follows the Sentinels to the replica they promote and answers the next one.
 *
 * A connection no Sentinel accepts is refused within seconds with the first Sentinel's own
 * reason. ioredis's Sentinel client retries for good without settling connect() and says
 * only "All sentinels are unreachable … Last error: Connection is closed.": `magpie send`,
 * `start` and `doctor` hung with every Sentinel down or refusing the certificate.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { Bus } from '../../../src/bus/bus.js';
import { AppError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { redisCheckResults } from '../../fakes/doctor.js';
import { type SentinelGroup, startSentinelGroup } from '../../fakes/redis-sentinel.js';
import { freePort } from '../../fakes/redis-server.js';
import { rejectedWith } from '../../fakes/rejection.js';
import { clientTlsEnv, makeTestCertificates, type TestCertificates } from '../../fakes/tls-certs.js';
import { waitFor } from '../../fakes/wait-for.js';
import { answersAcross, busConnector, cleanupsAfterEach } from '../bus/helpers.js';

let certs: TestCertificates;
let group: SentinelGroup;
let workspace: string;

beforeAll(async () => {
  certs = await makeTestCertificates();
  // Not os.tmpdir(): the certificates' folder is in there, and a client key inside the workspace is refused.
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-tls-workspace-'));
  group = await startSentinelGroup({ replicas: 1, tls: certs });
}, 60_000);
afterAll(async () => {
  await group?.stop();
  certs?.remove();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
}, 30_000);

const cleanups = cleanupsAfterEach();
const connect = busConnector(cleanups);

describe('Redis Sentinel over TLS', () => {
  it('lets doctor reach the master and ask the Sentinels how they watch it, over TLS', async () => {
    const results = await redisCheckResults(
      parseConfig({
        REDIS_SENTINELS: group.addresses,
        REDIS_URL: 'rediss://sentinel-master',
        ...clientTlsEnv(certs),
        MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
        MAGPIE_WORKSPACE: workspace,
      }),
    );
    expect(results.find((r) => r.detail.startsWith('reachable'))).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(
        new RegExp(`^reachable at sentinel mymaster at 127\\.0\\.0\\.1:${group.master.port} \\(sentinels `),
      ),
    });
    expect(results.find((r) => r.detail.startsWith("TLS: Redis's certificate"))).toMatchObject({
      status: 'warn', // the test certificates live two days
      detail: expect.stringMatching(/^TLS: Redis's certificate \(redis-server\) valid until /),
    });
    expect(results.find((r) => r.detail.startsWith('Sentinels:'))).toEqual({
      status: 'ok',
      detail: 'Sentinels: master down after 2000 ms, quorum 2, 1 replica(s)',
    });
  });

  it('answers over TLS through the Sentinels, and again on the promoted replica after the master is killed', async () => {
    const config = parseConfig({
      REDIS_SENTINELS: group.addresses,
      REDIS_URL: 'rediss://sentinel-master',
      ...clientTlsEnv(certs),
      MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
      MAGPIE_WORKSPACE: workspace,
    });
    await answersAcross(connect, config, cleanups, 'tls-sentinel', async () => {
      const oldPort = await group.masterPort();
      await group.master.kill();
      await waitFor(
        async () => (await group.masterPort()) !== oldPort,
        30_000,
        'the Sentinels promoting the replica',
      );
      expect(await group.masterPort()).toBe(group.replicas[0]!.port);
    });
  }, 60_000);

  /** Bus.connect's refusal for `env`, and how long it took. */
  async function refusal(env: Record<string, string>): Promise<{ message: string; ms: number }> {
    const started = Date.now();
    const config = parseConfig({
      MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
      MAGPIE_WORKSPACE: workspace,
      ...env,
    });
    const error = await rejectedWith(AppError, Bus.connect({ config, logger: silentLogger() }));
    expect(error).toMatchObject({ code: 'REDIS_UNAVAILABLE', exitCode: 3 });
    return { message: error.message, ms: Date.now() - started };
  }

  it("refuses within seconds when no Sentinel accepts magpie's TLS, saying why", async () => {
    const { message, ms } = await refusal({
      REDIS_SENTINELS: group.addresses,
      REDIS_URL: 'rediss://sentinel-master',
      REDIS_TLS_CERT: certs.clientCert,
      REDIS_TLS_KEY: certs.clientKey,
    });
    const first = group.addresses.split(',')[0]!;
    expect(message).toBe(
      `Redis at sentinel mymaster (sentinels ${group.addresses}) is unreachable: no Sentinel answered (${first}: self-signed certificate in certificate chain) (its certificate is not signed by a CA magpie trusts: REDIS_TLS_CA names the PEM file of the CA that signed it)`,
    );
    expect(ms).toBeLessThan(15_000);
  }, 30_000);

  it('refuses within seconds when every Sentinel is down', async () => {
    const port = await freePort();
    const { message, ms } = await refusal({ REDIS_SENTINELS: `127.0.0.1:${port}` });
    expect(message).toBe(
      `Redis at sentinel mymaster (sentinels 127.0.0.1:${port}) is unreachable: no Sentinel answered (127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port})`,
    );
    expect(ms).toBeLessThan(15_000);
  }, 30_000);
});
