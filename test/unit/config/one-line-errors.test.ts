/**
 * A bad configuration ends magpie with one line: the variable, what is wrong
 * with it and how to fix it, exit code 2 — and never a secret, neither one of
 * the configured keys and tokens nor a password inside the bad value itself.
 * Checked for parseConfig (every command's path) and loadConfig (with .env).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, parseConfig } from '../../../src/app/config.js';
import type { ConfigNeeds } from '../../../src/config/index.js';
import { AppError, ConfigError, ExitCode } from '../../../src/errors/index.js';

/** Secrets set in every case: none may appear in any message. */
const SECRETS = {
  OPENAI_API_KEY: 'sk-SECRET-openai-41f7',
  TELEGRAM_BOT_TOKEN: '777:SECRET-telegram-9c2e',
  DISCORD_BOT_TOKEN: 'SECRET-discord-55aa',
  BRAVE_API_KEY: 'SECRET-brave-0b1d',
  TAVILY_API_KEY: 'SECRET-tavily-77e0',
  MAGPIE_DASHBOARD_TOKEN: 'SECRET-dashboard-3f3f',
};

const base = { MAGPIE_WORKSPACE: '/tmp/magpie-one-line-ws', MAGPIE_TIMEZONE: 'UTC', ...SECRETS };

interface BadCase {
  /** What is wrong. */
  what: string;
  env: Record<string, string | undefined>;
  needs?: ConfigNeeds;
  /** The variable the line must name. */
  variable: string;
  /** Words the line must hold (what is wrong, what is allowed). */
  says: RegExp;
  /** Parts of the bad value that must not be echoed (passwords). */
  hidden?: string[];
}

const CASES: BadCase[] = [
  {
    what: 'a missing API key for a command that calls the model',
    env: { OPENAI_API_KEY: undefined },
    needs: { llm: true },
    variable: 'OPENAI_API_KEY',
    says: /is not set/,
  },
  {
    what: 'a base URL that is not a URL',
    env: { OPENAI_BASE_URL: 'api.openai.com/v1' },
    variable: 'OPENAI_BASE_URL',
    says: /is not a URL/,
  },
  {
    what: 'a base URL with a password in it',
    env: { OPENAI_BASE_URL: 'https://alice:PW-in-base-url-8d@api.example.com/v1' },
    variable: 'OPENAI_BASE_URL',
    says: /user name or password/,
    hidden: ['PW-in-base-url-8d', 'alice'],
  },
  {
    what: 'an API root that is not a URL',
    env: { TELEGRAM_API_ROOT: 'http//127.0.0.1' },
    variable: 'TELEGRAM_API_ROOT',
    says: /is not a URL/,
  },
  {
    what: 'a duration without a unit word',
    env: { MAGPIE_LLM_TIMEOUT: 'soon' },
    variable: 'MAGPIE_LLM_TIMEOUT',
    says: /not a duration/,
  },
  {
    what: 'a duration over the limit',
    env: { MAGPIE_EXEC_TIMEOUT: '999999h' },
    variable: 'MAGPIE_EXEC_TIMEOUT',
    says: /too long/,
  },
  {
    what: 'a zero duration where 0 does not mean off',
    env: { MAGPIE_TOOL_TIMEOUT: '0s' },
    variable: 'MAGPIE_TOOL_TIMEOUT',
    says: /above 0/,
  },
  {
    what: 'a number out of range',
    env: { MAGPIE_LLM_MAX_RETRIES: '11' },
    variable: 'MAGPIE_LLM_MAX_RETRIES',
    says: /from 0 to 10/,
  },
  {
    what: 'a port out of range',
    env: { MAGPIE_DASHBOARD_PORT: '70000' },
    variable: 'MAGPIE_DASHBOARD_PORT',
    says: /from 1 to 65535/,
  },
  {
    what: 'a count that is not a positive whole number',
    env: { MAGPIE_WORKER_CONCURRENCY: '2.5' },
    variable: 'MAGPIE_WORKER_CONCURRENCY',
    says: /positive whole number/,
  },
  {
    what: 'a log level that is not one of the names',
    env: { LOG_LEVEL: 'loud' },
    variable: 'LOG_LEVEL',
    says: /fatal|info|expected one of/i,
  },
  {
    what: 'an unknown web search backend',
    env: { MAGPIE_WEB_SEARCH: 'google' },
    variable: 'MAGPIE_WEB_SEARCH',
    says: /brave, tavily, searxng or off/,
  },
  {
    what: 'a switch that is neither on nor off',
    env: { MAGPIE_STREAM: 'sometimes' },
    variable: 'MAGPIE_STREAM',
    says: /on or off/,
  },
  {
    what: 'an unknown MAGPIE_EXEC_SANDBOX',
    env: { MAGPIE_EXEC_SANDBOX: 'docker' },
    variable: 'MAGPIE_EXEC_SANDBOX',
    says: /auto, bwrap or off/,
  },
  {
    what: 'a REDIS_URL with another scheme, its password kept out',
    env: { REDIS_URL: 'http://:PW-redis-61c0@127.0.0.1:6379' },
    variable: 'REDIS_URL',
    says: /redis:\/\/ or rediss:\/\//,
    hidden: ['PW-redis-61c0'],
  },
  {
    what: 'a REDIS_URL that is not a URL at all, its password kept out',
    env: { REDIS_URL: 'PW-redis-7d11@localhost:6379' },
    variable: 'REDIS_URL',
    says: /is not a URL/,
    hidden: ['PW-redis-7d11'],
  },
  {
    what: 'a queue prefix with a separator in it',
    env: { MAGPIE_QUEUE_PREFIX: 'magpie:prod' },
    variable: 'MAGPIE_QUEUE_PREFIX',
    says: /letters, digits/,
  },
  {
    what: 'a time zone that does not exist',
    env: { MAGPIE_TIMEZONE: 'Mars/Olympus_Mons' },
    variable: 'MAGPIE_TIMEZONE',
    says: /IANA time zone/,
  },
  {
    what: 'active hours in another form',
    env: { MAGPIE_HEARTBEAT_ACTIVE_HOURS: '8-22' },
    variable: 'MAGPIE_HEARTBEAT_ACTIVE_HOURS',
    says: /08:00-22:00/,
  },
  {
    what: 'an input price without an output price',
    env: { MAGPIE_PRICE_INPUT: '0.15' },
    variable: 'MAGPIE_PRICE_OUTPUT',
    says: /is not set/,
  },
  {
    what: 'a chosen search backend without its key',
    env: { MAGPIE_WEB_SEARCH: 'tavily', TAVILY_API_KEY: undefined },
    variable: 'TAVILY_API_KEY',
    says: /is not set/,
  },
  {
    what: 'a fallback model whose key variable is not set, for a command that calls the model',
    env: { MAGPIE_FALLBACK_MODELS: 'backup-model@https://backup.example/v1#BACKUP_KEY' },
    needs: { llm: true },
    variable: 'MAGPIE_FALLBACK_MODELS',
    says: /BACKUP_KEY is not set/,
  },
  {
    what: 'a fallback model whose URL holds a password, the password kept out',
    env: { MAGPIE_FALLBACK_MODELS: 'backup-model@https://bob:PW-fall@back-2a@backup.example/v1' },
    variable: 'MAGPIE_FALLBACK_MODELS',
    says: /user name or password/,
    hidden: ['PW-fall', 'back-2a', 'bob'],
  },
  {
    what: 'a bad value that holds a line break (it must not start a second line)',
    env: { MAGPIE_EXEC_SANDBOX: 'bwrap\nFAKE: second line' },
    variable: 'MAGPIE_EXEC_SANDBOX',
    says: /auto, bwrap or off/,
  },
];

/** The error `run` throws, or fails the test. */
function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (err) {
    return err;
  }
  throw new ConfigError('expected the configuration to be refused');
}

/** Asserts the shape every refusal has: AppError, exit 2, one line naming the variable, no secret. */
function expectOneLine(err: unknown, c: Pick<BadCase, 'variable' | 'says' | 'hidden'>): void {
  expect(err).toBeInstanceOf(AppError);
  const error = err as AppError;
  expect(error.code).toBe('CONFIG_INVALID');
  expect(error.exitCode).toBe(ExitCode.config);
  expect(ExitCode.config).toBe(2);
  expect(error.message).not.toMatch(/[\r\n\u2028\u2029]/);
  expect(error.message).toContain(c.variable);
  expect(error.message).toMatch(c.says);
  for (const secret of [...Object.values(SECRETS), ...(c.hidden ?? [])])
    expect(error.message).not.toContain(secret);
}

describe('parseConfig: one line for each bad configuration', () => {
  it("accepts the base configuration (so each refusal below is the bad value's)", () => {
    expect(parseConfig(base, { llm: true }).llm.apiKey).toBe(SECRETS.OPENAI_API_KEY);
  });

  for (const c of CASES) {
    it(`refuses ${c.what}`, () => {
      expectOneLine(
        thrown(() => parseConfig({ ...base, ...c.env }, c.needs)),
        c,
      );
    });
  }
});

describe('loadConfig: the same line when the value comes from .env', () => {
  let dir: string | undefined;
  const loaded: string[] = [];
  afterEach(() => {
    // process.loadEnvFile sets what the file holds; take it back out.
    for (const name of loaded.splice(0)) delete process.env[name];
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  const envFile = (text: string): string => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-one-line-'));
    const file = path.join(dir, '.env');
    writeFileSync(file, text);
    return file;
  };

  it('refuses a REDIS_URL with another scheme read from .env, its password kept out', () => {
    const names = ['REDIS_URL', 'MAGPIE_WORKSPACE', 'MAGPIE_TIMEZONE'];
    for (const name of names)
      expect(process.env[name], `${name} set in the test environment`).toBeUndefined();
    loaded.push(...names);
    const file = envFile(
      'MAGPIE_WORKSPACE=/tmp/magpie-one-line-ws\nMAGPIE_TIMEZONE=UTC\nREDIS_URL=mysql://root:PW-env-file-4e4e@db:3306\n',
    );
    expectOneLine(
      thrown(() => loadConfig({ envFile: file })),
      { variable: 'REDIS_URL', says: /redis:\/\//, hidden: ['PW-env-file-4e4e'] },
    );
  });

  it('refuses an .env that cannot be read, in one line naming it', () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-one-line-'));
    // A folder where the file should be: it exists, but reading it fails.
    expectOneLine(
      thrown(() => loadConfig({ envFile: dir! })),
      { variable: dir, says: /could not be read/ },
    );
  });
});
