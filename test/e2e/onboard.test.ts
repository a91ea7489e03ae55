/**
 * `magpie onboard` as a subprocess (the built CLI) against the fake OpenAI,
 * Telegram and Discord servers: flags with --yes, piped answers, the
 * Telegram id capture, and every refusal (bad key, unknown model, bad bot
 * token, unreachable endpoint) writing nothing and printing no secret.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeDiscord, startFakeDiscord } from '../fakes/discord-server.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { startFakeSearch } from '../fakes/search-servers.js';
import { dmUpdate, type FakeTelegram, groupUpdate, startFakeTelegram } from '../fakes/telegram-server.js';
import { closedPort, said } from './cli-helpers.js';
import { build, daemonEnv, magpie, OPEN_STDIN } from './daemon-helpers.js';

const API_KEY = 'sk-onboard-secret-key-0123456789';
const TG_TOKEN = '424242:onboard-telegram-secret-token';
const DC_TOKEN = 'onboard.discord.secret-token';
const SECRETS = [API_KEY, TG_TOKEN, DC_TOKEN];

const EXISTING_ENV = `# my settings
OPENAI_API_KEY=sk-old-key
export OPENAI_BASE_URL=https://old.example/v1
# keep me
LOG_LEVEL=debug
MAGPIE_QUEUE_PREFIX=mine
`;

describe('magpie onboard', () => {
  let openai: FakeOpenAI;
  let telegram: FakeTelegram;
  let discord: FakeDiscord;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    build();
    openai = await startFakeOpenAI({ apiKey: API_KEY, models: ['fake-model', 'other-model'] });
    telegram = await startFakeTelegram({ token: TG_TOKEN, botUsername: 'onboard_test_bot' });
    discord = await startFakeDiscord({ token: DC_TOKEN });
    // Nothing of the test's own environment (a real OPENAI_API_KEY, say) reaches the command.
    env = daemonEnv({ OPENAI_API_KEY: undefined });
  }, 120_000);

  afterAll(async () => {
    await Promise.all([openai?.close(), telegram?.close(), discord?.close()]);
  });

  /** A fresh folder to run in, with `envText` as its .env when given. */
  function folder(envText?: string): string {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-onboard-'));
    if (envText !== undefined) writeFileSync(path.join(dir, '.env'), envText, { mode: 0o644 });
    return dir;
  }

  async function onboard(dir: string, args: string[], input?: string | typeof OPEN_STDIN) {
    const proc = magpie(['onboard', ...args], env, dir, input);
    const code = await proc.exited;
    const out = proc.stdout() + proc.stderr();
    for (const secret of SECRETS) expect(out).not.toContain(secret);
    return { code, out, stderr: proc.stderr(), proc };
  }

  const modelFlags = () => ['--base-url', openai.baseURL, '--api-key', API_KEY, '--model', 'fake-model'];

  it('with flags and --yes: changes only the answered variables of an existing .env, keeps a backup, 0600, creates the workspace', async () => {
    const dir = folder(EXISTING_ENV);
    const { code, out } = await onboard(dir, [...modelFlags(), '--yes']);
    expect(code, out).toBe(0);
    const envFile = path.join(dir, '.env');
    expect(statSync(envFile).mode & 0o777).toBe(0o600);
    const text = readFileSync(envFile, 'utf8');
    expect(text).toBe(`# my settings
OPENAI_API_KEY=${API_KEY}
export OPENAI_BASE_URL=${openai.baseURL}
# keep me
LOG_LEVEL=debug
MAGPIE_QUEUE_PREFIX=mine

# Set by magpie onboard
MAGPIE_MODEL=fake-model
MAGPIE_WORKSPACE=./workspace
`);
    const backups = readdirSync(dir).filter((f) => f.startsWith('.env.bak-'));
    expect(backups).toHaveLength(1);
    expect(readFileSync(path.join(dir, backups[0]!), 'utf8')).toBe(EXISTING_ENV);
    expect(statSync(path.join(dir, backups[0]!)).mode & 0o777).toBe(0o600);
    expect(existsSync(path.join(dir, 'workspace', 'AGENTS.md'))).toBe(true);
    expect(existsSync(path.join(dir, 'workspace', '.magpie-id'))).toBe(true);
    expect(out).toContain('sk-…6789');
    expect(out).toMatch(/npm start/);
    // The one-token call reached the model with the key.
    expect(openai.requests.at(-1)?.headers.authorization).toBe(`Bearer ${API_KEY}`);
  });

  it('a new .env starts from .env.example, so every other setting stays documented', async () => {
    const dir = folder();
    const { code, out } = await onboard(dir, [...modelFlags(), '--yes', '--workspace', 'ws']);
    expect(code, out).toBe(0);
    const text = readFileSync(path.join(dir, '.env'), 'utf8');
    expect(text).toContain(`OPENAI_BASE_URL=${openai.baseURL}`);
    expect(text).toContain('MAGPIE_WORKSPACE=ws');
    expect(text).toContain('# --- Telegram ---');
    expect(readdirSync(dir).some((f) => f.startsWith('.env.bak-'))).toBe(false);
    expect(existsSync(path.join(dir, 'ws', 'SOUL.md'))).toBe(true);
  });

  it('a refused key: exit 2, one line naming the key, nothing written', async () => {
    const dir = folder(EXISTING_ENV);
    const { code, stderr } = await onboard(dir, [
      '--base-url',
      openai.baseURL,
      '--api-key',
      'sk-wrong-key-0123456789abcdef',
      '--model',
      'fake-model',
      '--yes',
    ]);
    expect(code).toBe(2);
    expect(said(stderr)).toEqual([
      `magpie: ${openai.baseURL} refused the API key (401): check the key given with --api-key`,
    ]);
    expect(stderr).not.toContain('sk-wrong-key-0123456789abcdef');
    expectUntouched(dir);
  });

  it('an unknown model: exit 2, one line listing what the endpoint offers, nothing written', async () => {
    const dir = folder(EXISTING_ENV);
    const { code, stderr } = await onboard(dir, [
      '--base-url',
      openai.baseURL,
      '--api-key',
      API_KEY,
      '--model',
      'gpt-nonexistent',
      '--yes',
    ]);
    expect(code).toBe(2);
    expect(said(stderr)).toEqual([
      `magpie: unknown model "gpt-nonexistent": ${openai.baseURL} lists fake-model, other-model`,
    ]);
    expectUntouched(dir);
  });

  it('an endpoint that cannot be reached: exit 3, nothing written', async () => {
    const dir = folder();
    const url = `http://127.0.0.1:${await closedPort()}/v1`;
    const { code, stderr } = await onboard(dir, [
      '--base-url',
      url,
      '--api-key',
      API_KEY,
      '--model',
      'm',
      '--yes',
    ]);
    expect(code).toBe(3);
    expect(said(stderr)).toHaveLength(1);
    expect(stderr).toMatch(/cannot reach .*ECONNREFUSED/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('--yes without a key for an endpoint that needs one fails naming --api-key', async () => {
    const dir = folder();
    const { code, stderr } = await onboard(dir, ['--base-url', 'https://api.openai.com/v1', '--yes']);
    expect(code).toBe(2);
    expect(said(stderr)).toEqual([
      'magpie: --yes: --api-key is required (the key of https://api.openai.com/v1)',
    ]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('--yes without a model never guesses one from the list: it fails naming --model', async () => {
    const dir = folder();
    const { code, stderr } = await onboard(dir, [
      '--base-url',
      openai.baseURL,
      '--api-key',
      API_KEY,
      '--yes',
    ]);
    expect(code).toBe(2);
    expect(said(stderr)).toEqual([
      'magpie: --yes: --model is required (no model in .env that the endpoint lists)',
    ]);
    expect(readdirSync(dir)).toEqual([]);
  });

  /** `onboard` with the model flags, `flags` and --yes over an existing .env; expects exit 2. */
  async function refusedOverExistingEnv(flags: string[]): Promise<{ dir: string; stderr: string }> {
    const dir = folder(EXISTING_ENV);
    const { code, stderr } = await onboard(dir, [...modelFlags(), ...flags, '--yes']);
    expect(code).toBe(2);
    return { dir, stderr };
  }

  it('a bad Telegram token: exit 2, one line, nothing written', async () => {
    const { dir, stderr } = await refusedOverExistingEnv([
      '--telegram-token',
      '111:not-the-right-token',
      '--telegram-api-root',
      telegram.apiRoot,
    ]);
    expect(said(stderr)).toEqual([
      'magpie: Telegram refused the bot token (getMe answered 401): copy it again from @BotFather',
    ]);
    expect(stderr).not.toContain('not-the-right-token');
    expectUntouched(dir);
  });

  it('bots by flags with --yes: tokens checked, allow lists as given, no message awaited', async () => {
    const dir = folder();
    const { code, out } = await onboard(dir, [
      ...modelFlags(),
      '--telegram-token',
      TG_TOKEN,
      '--telegram-api-root',
      telegram.apiRoot,
      '--telegram-allow-from',
      '123456789, @alice_b',
      '--discord-token',
      DC_TOKEN,
      '--discord-api-root',
      discord.apiRoot,
      '--discord-allow-from',
      '123456789012345678',
      '--yes',
    ]);
    expect(code, out).toBe(0);
    const text = readFileSync(path.join(dir, '.env'), 'utf8');
    expect(text).toMatch(/^TELEGRAM_ALLOW_FROM=123456789,@alice_b$/m);
    expect(text).toMatch(/^DISCORD_ALLOW_FROM=123456789012345678$/m);
    expect(text).toContain(`DISCORD_BOT_TOKEN=${DC_TOKEN}`);
    expect(text).toContain(`DISCORD_API_ROOT=${discord.apiRoot}`);
    expect(out).toContain('✓ Telegram accepts the token: bot @onboard_test_bot');
  });

  it('an allow-list entry that is no user id: exit 2, nothing written', async () => {
    const { dir, stderr } = await refusedOverExistingEnv([
      '--telegram-token',
      TG_TOKEN,
      '--telegram-api-root',
      telegram.apiRoot,
      '--telegram-allow-from',
      '123,@x y',
    ]);
    expect(said(stderr)).toEqual([expect.stringMatching(/^magpie: "@x y" is not a Telegram user id/)]);
    expectUntouched(dir);
  });

  it('a bad Discord token: exit 2, nothing written', async () => {
    const { dir, stderr } = await refusedOverExistingEnv([
      '--discord-token',
      'wrong.discord.token',
      '--discord-api-root',
      discord.apiRoot,
    ]);
    expect(said(stderr)).toHaveLength(1);
    expect(stderr).toContain('Discord refused the bot token (GET /users/@me answered 401)');
    expectUntouched(dir);
  });

  it('interactive with piped answers: endpoint, hidden key, model by number, Telegram id captured from a message', async () => {
    const dir = folder();
    const proc = magpie(
      ['onboard', '--capture-timeout', '20s', '--telegram-api-root', telegram.apiRoot],
      env,
      dir,
      OPEN_STDIN,
    );
    // Every answer up to the Telegram token at once: lines that arrive before their question are kept.
    proc.child.stdin?.write(['6', openai.baseURL, API_KEY, '2', TG_TOKEN].join('\n').concat('\n'));
    // The token check, then the wait for a message; a group message and an old one are passed over.
    await proc.waitFor(/send any message to @onboard_test_bot/);
    telegram.pushUpdate(groupUpdate(-100123, { id: 555, username: 'someone_else' }, 'hello all'));
    telegram.pushUpdate(
      dmUpdate({ id: 777, username: 'stale' }, 'old', { date: Math.floor(Date.now() / 1000) - 3600 }),
    );
    telegram.pushUpdate(dmUpdate({ id: 4242_4242, username: 'alice' }, 'hi bot'));
    await proc.waitFor(/message from @alice/);
    // Discord, Slack, e-mail, WhatsApp, Signal and Matrix skipped, no web search, the default workspace, then yes to writing.
    proc.child.stdin?.end(['', '', '', '', '', '', '', '', ''].join('\n').concat('\n'));
    const code = await proc.exited;
    const out = proc.stdout() + proc.stderr();
    expect(code, out).toBe(0);
    for (const secret of SECRETS) expect(out).not.toContain(secret);
    const text = readFileSync(path.join(dir, '.env'), 'utf8');
    expect(text).toContain(`OPENAI_BASE_URL=${openai.baseURL}`);
    expect(text).toContain(`OPENAI_API_KEY=${API_KEY}`);
    expect(text).toContain('MAGPIE_MODEL=other-model');
    expect(text).toContain(`TELEGRAM_BOT_TOKEN=${TG_TOKEN}`);
    expect(text).toMatch(/^TELEGRAM_ALLOW_FROM=42424242$/m);
    expect(text).toContain(`TELEGRAM_API_ROOT=${telegram.apiRoot}`);
    expect(text).toMatch(/^DISCORD_BOT_TOKEN=$/m);
    expect(statSync(path.join(dir, '.env')).mode & 0o777).toBe(0o600);
    expect(existsSync(path.join(dir, 'workspace', 'AGENTS.md'))).toBe(true);
    expect(out).toContain('Start magpie:  npm start');
  });

  it('interactive: Enter keeps what .env already holds (the key shown masked, never in full)', async () => {
    const before = `OPENAI_BASE_URL=${openai.baseURL}\nOPENAI_API_KEY=${API_KEY}\nMAGPIE_MODEL=other-model\n`;
    const dir = folder(before);
    const { code, out } = await onboard(dir, [], '\n'.repeat(16));
    expect(code, out).toBe(0);
    expect(out).toContain('Endpoint [6]:');
    expect(out).toContain(`Base URL (ending in /v1 for most servers) [${openai.baseURL}]:`);
    expect(out).toContain('[Enter keeps sk-…6789]');
    expect(out).toContain('Model (a number or a name) [other-model]:');
    expect(readFileSync(path.join(dir, '.env'), 'utf8')).toBe(
      `${before}\n# Set by magpie onboard\nMAGPIE_WORKSPACE=./workspace\n`,
    );
  });

  it('interactive: answering no at the end writes nothing (exit 130)', async () => {
    const dir = folder(EXISTING_ENV);
    const answers = ['6', openai.baseURL, API_KEY, '1', '', '', '', '', '', '', '', '', '', 'n'];
    const { code, out } = await onboard(dir, [], `${answers.join('\n')}\n`);
    expect(code, out).toBe(130);
    expectUntouched(dir);
  });

  it('interactive: input that ends early cancels with exit 130 and writes nothing', async () => {
    const dir = folder(EXISTING_ENV);
    const { code, stderr } = await onboard(dir, [], '6\n');
    expect(code).toBe(130);
    expect(said(stderr)).toEqual([expect.stringMatching(/^magpie: the input ended before "Base URL/)]);
    expectUntouched(dir);
  });

  it('web search by flags: a SearXNG behind basic auth is checked with one query; its password is never shown', async () => {
    const searx = await startFakeSearch('searxng', { key: 'me:searx-password' });
    try {
      const dir = folder();
      const url = searx.root.replace('http://', 'http://me:searx-password@');
      const { code, out } = await onboard(dir, [
        ...modelFlags(),
        '--web-search',
        'searxng',
        '--web-search-url',
        url,
        '--yes',
      ]);
      expect(code, out).toBe(0);
      expect(searx.requests).toHaveLength(1);
      expect(out).not.toContain('searx-password');
      const text = readFileSync(path.join(dir, '.env'), 'utf8');
      expect(text).toMatch(/^MAGPIE_WEB_SEARCH=searxng$/m);
      expect(text).toContain(`SEARXNG_URL=${url}`);
    } finally {
      await searx.close();
    }
  });

  it('a refused web search key: exit 2, nothing written', async () => {
    const brave = await startFakeSearch('brave', { key: 'the-right-brave-key' });
    try {
      const dir = folder(EXISTING_ENV);
      writeFileSync(path.join(dir, '.env'), `${EXISTING_ENV}BRAVE_API_ROOT=${brave.root}\n`);
      const { code, stderr } = await onboard(dir, [
        ...modelFlags(),
        '--web-search',
        'brave',
        '--web-search-key',
        'a-wrong-brave-key',
        '--yes',
      ]);
      expect(code).toBe(2);
      expect(said(stderr)).toEqual([expect.stringMatching(/^magpie: web search: .*401/)]);
      expect(readdirSync(dir)).toEqual(['.env']);
    } finally {
      await brave.close();
    }
  });

  it("warns when the shell's environment holds a written variable with another value (it would win over .env)", async () => {
    const dir = folder();
    const proc = magpie(
      ['onboard', ...modelFlags(), '--yes'],
      { ...env, OPENAI_API_KEY: 'sk-from-the-shell-0000' },
      dir,
    );
    expect(await proc.exited).toBe(0);
    expect(proc.stdout()).toContain(
      "Note: OPENAI_API_KEY is also set in this shell's environment, which wins over .env: unset it before starting magpie.",
    );
    expect(proc.stdout()).not.toContain('sk-from-the-shell-0000');
  });

  function expectUntouched(dir: string): void {
    const files = readdirSync(dir);
    expect(files.filter((f) => f !== '.env')).toEqual([]);
    if (files.includes('.env')) expect(readFileSync(path.join(dir, '.env'), 'utf8')).toBe(EXISTING_ENV);
  }
});
