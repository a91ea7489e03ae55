/**
 * The daemon on a Redis that serves TLS only and asks for client certificates, configured
 * as an operator would: REDIS_URL=rediss://…, REDIS_TLS_CA, REDIS_TLS_CERT and
 * REDIS_TLS_KEY in the environment. `magpie start` runs on it, `magpie send` is answered
 * through it, and `magpie doctor` finds it. A setting that cannot work stops a command
 * with one line and its exit code: 2 for a TLS file without a rediss:// URL, 3 (Redis
 * unavailable) with what to set for a missing client certificate. The client key's text
 * is in no output.
 */
import { readFileSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../fakes/openai-server.js';
import { freePort, type RedisHandle, startRedis } from '../fakes/redis-server.js';
import {
  clientTlsEnv,
  makeTestCertificates,
  redisTlsArgs,
  type TestCertificates,
} from '../fakes/tls-certs.js';
import { build, daemonEnv, magpie, type Proc, stop, tempWorkspace } from './daemon-helpers.js';

describe('magpie on a Redis that speaks TLS only', () => {
  let certs: TestCertificates;
  let redis: RedisHandle;
  let fake: FakeOpenAI;
  let start: Proc | undefined;
  let workspace: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    build();
    certs = await makeTestCertificates();
    const port = await freePort();
    redis = await startRedis({ port, args: redisTlsArgs(certs, port, 'yes') });
    fake = await startFakeOpenAI({ responder: (req) => ({ content: `answered: ${lastUserText(req)}` }) });
    workspace = tempWorkspace();
    env = daemonEnv({
      OPENAI_BASE_URL: fake.baseURL,
      MAGPIE_WORKSPACE: workspace,
      REDIS_URL: `rediss://127.0.0.1:${port}`,
      ...clientTlsEnv(certs),
    });
  }, 120_000);
  afterAll(async () => {
    await stop(start);
    await Promise.all([fake?.close(), redis?.stop()]);
    certs?.remove();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
  });

  it('runs the daemon, answers send and passes doctor over TLS; the key never shows', async () => {
    start = magpie(['start'], env);
    await start.waitFor(/magpie is running/, 30_000);
    const send = magpie(['send', '-m', 'hello', '--timeout', '20s'], env);
    expect(await send.exited).toBe(0);
    expect(send.stdout().trim()).toBe('answered: hello');
    const doctor = magpie(['doctor'], env);
    await doctor.exited;
    expect(doctor.stdout()).toMatch(/^✓ redis +reachable at rediss:\/\/127\.0\.0\.1:\d+\/?, version \d/m);
    // The test certificates live two days: both are warned of, with their date.
    expect(doctor.stdout()).toMatch(
      /^! redis +TLS: Redis's certificate \(redis-server\) valid until \d{4}-\d\d-\d\d \(\d days?\): renew it before then/m,
    );
    expect(doctor.stdout()).toMatch(
      /^! redis +TLS: magpie's client certificate \(REDIS_TLS_CERT\) valid until /m,
    );
    const key = readFileSync(certs.clientKey, 'utf8');
    const body = key.split('\n')[1]!;
    for (const proc of [start, send, doctor]) expect(proc.stdout() + proc.stderr()).not.toContain(body);
  }, 60_000);

  it('stops with one line: exit 2 for a TLS file without rediss://, exit 3 naming the client certificate', async () => {
    const plain = magpie(['send', '-m', 'hi'], { ...env, REDIS_URL: `redis://127.0.0.1:${redis.port}` });
    expect(await plain.exited).toBe(2);
    expect(plain.stderr().trim()).toMatch(/^magpie: REDIS_TLS_CA is set but REDIS_URL is not rediss:\/\/: /);
    expect(plain.stderr().trim().split('\n')).toHaveLength(1);

    const noCert = magpie(['send', '-m', 'hi'], { ...env, REDIS_TLS_CERT: '', REDIS_TLS_KEY: '' });
    expect(await noCert.exited).toBe(3);
    expect(noCert.stderr().trim()).toMatch(
      /^magpie: Redis at rediss:\/\/127\.0\.0\.1:\d+\/? is unreachable: .*client certificate.*REDIS_TLS_CERT and REDIS_TLS_KEY/,
    );
    expect(noCert.stderr().trim().split('\n')).toHaveLength(1);
  }, 60_000);
});
