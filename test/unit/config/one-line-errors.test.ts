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

/** A case whose bad value is `value`, set in the variable the line must name. */
function bad(what: string, variable: string, value: string, says: RegExp, hidden?: string[]): BadCase {
  return { what, env: { [variable]: value }, variable, says, ...(hidden ? { hidden } : {}) };
}

const CASES: BadCase[] = [
  {
    what: 'a missing API key for a command that calls the model',
    env: { OPENAI_API_KEY: undefined },
    needs: { llm: true },
    variable: 'OPENAI_API_KEY',
    says: /is not set/,
  },
  bad('a base URL that is not a URL', 'OPENAI_BASE_URL', 'api.openai.com/v1', /is not a URL/),
  bad(
    'a base URL with a password in it',
    'OPENAI_BASE_URL',
    'https://alice:PW-in-base-url-8d@api.example.com/v1',
    /user name or password/,
    ['PW-in-base-url-8d', 'alice'],
  ),
  bad('an API root that is not a URL', 'TELEGRAM_API_ROOT', 'http//127.0.0.1', /is not a URL/),
  bad('a duration without a unit word', 'MAGPIE_LLM_TIMEOUT', 'soon', /not a duration/),
  bad('a duration over the limit', 'MAGPIE_EXEC_TIMEOUT', '999999h', /too long/),
  bad('a zero duration where 0 does not mean off', 'MAGPIE_TOOL_TIMEOUT', '0s', /above 0/),
  bad('a number out of range', 'MAGPIE_LLM_MAX_RETRIES', '11', /from 0 to 10/),
  bad('a port out of range', 'MAGPIE_DASHBOARD_PORT', '70000', /from 1 to 65535/),
  bad(
    'a count that is not a positive whole number',
    'MAGPIE_WORKER_CONCURRENCY',
    '2.5',
    /positive whole number/,
  ),
  bad('a log level that is not one of the names', 'LOG_LEVEL', 'loud', /fatal|info|expected one of/i),
  bad('an unknown web search backend', 'MAGPIE_WEB_SEARCH', 'google', /brave, tavily, searxng or off/),
  bad('a switch that is neither on nor off', 'MAGPIE_STREAM', 'sometimes', /on or off/),
  bad('an unknown MAGPIE_EXEC_SANDBOX', 'MAGPIE_EXEC_SANDBOX', 'docker', /auto, bwrap or off/),
  bad(
    'a REDIS_URL with another scheme, its password kept out',
    'REDIS_URL',
    'http://:PW-redis-61c0@127.0.0.1:6379',
    /redis:\/\/ or rediss:\/\//,
    ['PW-redis-61c0'],
  ),
  bad(
    'a REDIS_URL that is not a URL at all, its password kept out',
    'REDIS_URL',
    'PW-redis-7d11@localhost:6379',
    /is not a URL/,
    ['PW-redis-7d11'],
  ),
  bad('a queue prefix with a separator in it', 'MAGPIE_QUEUE_PREFIX', 'magpie:prod', /letters, digits/),
  bad('a time zone that does not exist', 'MAGPIE_TIMEZONE', 'Mars/Olympus_Mons', /IANA time zone/),
  bad('active hours in another form', 'MAGPIE_HEARTBEAT_ACTIVE_HOURS', '8-22', /08:00-22:00/),
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
  bad(
    'a fallback model whose URL holds a password, the password kept out',
    'MAGPIE_FALLBACK_MODELS',
    'backup-model@https://bob:PW-fall@back-2a@backup.example/v1',
    /user name or password/,
    ['PW-fall', 'back-2a', 'bob'],
  ),
  bad(
    'a bad value that holds a line break (it must not start a second line)',
    'MAGPIE_EXEC_SANDBOX',
    'bwrap\nFAKE: second line',
    /auto, bwrap or off/,
  ),
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
