/**
 * `magpie doctor` as a subprocess against a healthy set-up (real Redis, fake
 * OpenAI, Telegram and Discord servers) and against each broken piece: exit
 * code, the ✗ line with its fix, and no secret in the output.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type FakeDiscord, startFakeDiscord } from '../fakes/discord-server.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { freePort } from '../fakes/redis-server.js';
import { type FakeTelegram, startFakeTelegram } from '../fakes/telegram-server.js';
import { build, daemonEnv, magpie, tempWorkspace } from './daemon-helpers.js';

const API_KEY = 'sk-doctor-secret-key';
const TG_TOKEN = '424242:doctor-telegram-secret';
const DC_TOKEN = 'doctor.discord.secret-token';

describe('magpie doctor', () => {
  let openai: FakeOpenAI;
  let telegram: FakeTelegram;
  let discord: FakeDiscord;
  let redis: Redis;
  let base: NodeJS.ProcessEnv;

  beforeAll(async () => {
    build();
    openai = await startFakeOpenAI({
      apiKey: API_KEY,
      models: ['fake-model', 'other'],
      responder: () => ({ content: 'OK' }),
    });
    telegram = await startFakeTelegram({ token: TG_TOKEN });
    discord = await startFakeDiscord({ token: DC_TOKEN });
    redis = new Redis(inject('redisUrl'));
    const prefix = `e2e-${randomUUID()}`;
    // A worker seen alive: the heartbeat key a running worker keeps (its TTL outlives the test).
    await redis.set(
      `${prefix}:workers:worker-test`,
      JSON.stringify({
        id: 'worker-test',
        pid: 1,
        host: 'here',
        concurrency: 4,
        startedAt: new Date().toISOString(),
      }),
      'PX',
      120_000,
    );
    base = daemonEnv({
      REDIS_URL: inject('redisUrl'),
      MAGPIE_QUEUE_PREFIX: prefix,
      MAGPIE_WORKSPACE: tempWorkspace(),
      OPENAI_API_KEY: API_KEY,
      OPENAI_BASE_URL: openai.baseURL,
      MAGPIE_MODEL: 'fake-model',
      TELEGRAM_BOT_TOKEN: TG_TOKEN,
      TELEGRAM_API_ROOT: telegram.apiRoot,
      DISCORD_BOT_TOKEN: DC_TOKEN,
      DISCORD_API_ROOT: discord.apiRoot,
    });
  }, 120_000);

  afterAll(async () => {
    redis?.disconnect();
    await Promise.all([openai?.close(), telegram?.close(), discord?.close()]);
  });

  async function doctor(env: NodeJS.ProcessEnv, args: string[] = []) {
    const proc = magpie(['doctor', ...args], env);
    const code = await proc.exited;
    const out = proc.stdout() + proc.stderr();
    for (const secret of [API_KEY, TG_TOKEN, DC_TOKEN]) expect(out).not.toContain(secret);
    return { code, out };
  }

  it('passes every check on a healthy set-up, --live included', async () => {
    const { code, out } = await doctor(base, ['--live']);
    expect(out).toMatch(/^✓ config /m);
    expect(out).toMatch(/^✓ workspace .*\(writable\)/m);
    expect(out).toMatch(/^✓ bootstrap files .*AGENTS\.md/m);
    expect(out).toMatch(/^✓ redis +reachable at redis:\/\/127\.0\.0\.1:\d+\/?, version \d/m);
    expect(out).toMatch(/^✓ redis +maxmemory-policy noeviction/m);
    expect(out).toMatch(/^✓ redis +persistence on \(appendonly\)/m);
    expect(out).toMatch(/^✓ llm endpoint .* lists fake-model/m);
    expect(out).toMatch(/^✓ llm live +one-token completion/m);
    expect(out).toMatch(/^✓ telegram +bot @magpie_test_bot/m);
    expect(out).toMatch(/^✓ discord +bot magpie_bot/m);
    expect(out).toMatch(/^✓ daemon +1 worker alive \(4 turn slots\)/m);
    expect(out).toContain('All checks passed.');
    expect(code).toBe(0);
    expect(
      openai.requests.at(-1)?.body.max_tokens ?? openai.requests.at(-1)?.body.max_completion_tokens,
    ).toBe(1);
  }, 30_000);

  it('a money limit with an unpriced model: ! budget prices with the fix, and still exit 0', async () => {
    const { code, out } = await doctor({ ...base, MAGPIE_BUDGET_DAILY: '2' });
    expect(out).toMatch(
      /^! budget prices +a money limit \(MAGPIE_BUDGET_\*\) is set but fake-model has no price/m,
    );
    expect(out).toContain('fix: add fake-model=INPUT/CACHED/OUTPUT to MAGPIE_PRICES (per million tokens)');
    expect(out).toContain('All checks passed (1 warning).');
    expect(code).toBe(0);
  }, 30_000);

  it('a wrong Redis URL: ✗ redis with the fix, exit 1', async () => {
    const { code, out } = await doctor({
      ...base,
      REDIS_URL: `redis://:hidden-pw@127.0.0.1:${await freePort()}`,
    });
    expect(out).toMatch(/^✗ redis +Redis at redis:\/\/\[redacted\]@127\.0\.0\.1:\d+\/? is unreachable/m);
    expect(out).toMatch(/fix: start Redis or fix REDIS_URL in \.env/);
    expect(out).not.toContain('hidden-pw');
    expect(code).toBe(1);
  }, 30_000);

  it('a bad API key (401 from the endpoint): ✗ llm endpoint with the fix', async () => {
    const { code, out } = await doctor({ ...base, OPENAI_API_KEY: 'sk-wrong-key-for-doctor' });
    expect(out).toMatch(/^✗ llm endpoint /m);
    expect(out).toMatch(/fix: the endpoint refused the key: put a valid OPENAI_API_KEY in \.env/);
    expect(out).not.toContain('sk-wrong-key-for-doctor');
    expect(code).toBe(1);
  }, 30_000);

  it('a missing workspace: ✗ workspace and ✗ bootstrap files, fixed by magpie init', async () => {
    const missing = path.join(path.dirname(base.MAGPIE_WORKSPACE as string), 'nowhere');
    const { code, out } = await doctor({ ...base, MAGPIE_WORKSPACE: missing });
    expect(out).toMatch(/^✗ workspace +.*nowhere does not exist/m);
    expect(out).toContain(`fix: magpie init --workspace ${missing}`);
    expect(out).toMatch(/^✗ bootstrap files +missing AGENTS\.md/m);
    expect(code).toBe(1);
  }, 30_000);

  // MAGPIE_EXEC_BWRAP naming a program that does not exist: no sandbox can start.
  it('auto without a working sandbox: ✗ exec sandbox says exec is disabled, with the fix', async () => {
    const { code, out } = await doctor({
      ...base,
      MAGPIE_EXEC_SANDBOX: 'auto',
      MAGPIE_EXEC_BWRAP: '/nonexistent/magpie-test/bwrap',
    });
    expect(out).toMatch(
      /^✗ exec sandbox +exec is disabled: no sandbox could be started \(bwrap not found at \/nonexistent\/magpie-test\/bwrap/m,
    );
    expect(out).toContain(
      'fix: apt-get install bubblewrap (or set MAGPIE_EXEC_SANDBOX=off to run commands unsandboxed: exec can then read and do everything the magpie user can)',
    );
    expect(code).toBe(1);
  }, 30_000);

  it('a bad Telegram token: ✗ telegram with the fix, the token never printed', async () => {
    const { code, out } = await doctor({ ...base, TELEGRAM_BOT_TOKEN: '111:not-the-right-token' });
    expect(out).toMatch(/^✗ telegram +getMe answered 401: the token is invalid/m);
    expect(out).toContain('fix: put the token from @BotFather in TELEGRAM_BOT_TOKEN in .env');
    expect(out).not.toContain('not-the-right-token');
    expect(out).toMatch(/^✓ discord /m);
    expect(code).toBe(1);
  }, 30_000);
});
