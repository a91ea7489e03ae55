/**
 * TELEGRAM_ACCOUNTS and DISCORD_ACCOUNTS: `name=token` pairs read into the
 * channels' settings, each bot a channel instance `<channel>-<name>`; their
 * tokens are secrets; a bad value is one line, exit 2, that never shows a
 * token; an account follows its channel's stream switch.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { channelDoctorChecks, enabledChannels } from '../../../src/channels/registry.js';
import { SECRET_VARIABLES } from '../../../src/cli/secret-variables.js';
import { botInstances, parseBotAccounts } from '../../../src/config/bot-accounts.js';
import { streamsTo } from '../../../src/config/index.js';
import { secretValues } from '../../../src/config/secrets.js';
import { type AppError, ConfigError, ExitCode } from '../../../src/errors/index.js';

const base = { MAGPIE_WORKSPACE: '/tmp/magpie-accounts-ws', MAGPIE_TIMEZONE: 'UTC' };
const FAMILY = '101:AAF-family_SECRET-token';
const WORK = '202:AAW-work_SECRET-token';

function refusal(env: Record<string, string>): AppError {
  try {
    parseConfig({ ...base, ...env });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as AppError;
  }
  throw new ConfigError(`expected ${Object.keys(env).join(', ')} to be refused`);
}

describe('reading name=token pairs', () => {
  it('splits each entry on its first "=", so a token may hold ":" and "="', () => {
    expect(parseBotAccounts(` family = ${FAMILY} ,work=ab=c.d-e`)).toEqual({
      accounts: [
        { name: 'family', token: FAMILY },
        { name: 'work', token: 'ab=c.d-e' },
      ],
    });
  });

  it('puts the accounts in the settings and turns the channel on without the default token', () => {
    const config = parseConfig({ ...base, TELEGRAM_ACCOUNTS: `family=${FAMILY},work=${WORK}` });
    expect(config.channels.telegram.token).toBeUndefined();
    expect(config.channels.telegram.accounts.map((a) => a.name)).toEqual(['family', 'work']);
    const names = enabledChannels(config).map((c) => c.descriptor.name);
    expect(names).toContain('telegram');
    expect(names).not.toContain('discord');
    expect(botInstances('telegram', config.channels.telegram, VARIABLES).map((b) => b.name)).toEqual([
      'telegram-family',
      'telegram-work',
    ]);
  });

  it('names the default bot first, then each account as <channel>-<name>', () => {
    const config = parseConfig({
      ...base,
      DISCORD_BOT_TOKEN: 'main-discord-SECRET',
      DISCORD_ACCOUNTS: `work=${WORK}`,
    });
    const bots = botInstances('discord', config.channels.discord, {
      token: 'DISCORD_BOT_TOKEN',
      accounts: 'DISCORD_ACCOUNTS',
    });
    expect(bots).toEqual([
      { name: 'discord', token: 'main-discord-SECRET', source: 'DISCORD_BOT_TOKEN' },
      { name: 'discord-work', token: WORK, source: 'DISCORD_ACCOUNTS ("work")' },
    ]);
  });

  it('treats every account token as a secret', () => {
    const config = parseConfig({
      ...base,
      TELEGRAM_ACCOUNTS: `family=${FAMILY}`,
      DISCORD_ACCOUNTS: `work=${WORK}`,
    });
    expect(secretValues(config)).toEqual(expect.arrayContaining([FAMILY, WORK]));
    expect(SECRET_VARIABLES.has('TELEGRAM_ACCOUNTS')).toBe(true);
    expect(SECRET_VARIABLES.has('DISCORD_ACCOUNTS')).toBe(true);
  });

  it('lists one doctor check per bot, the default one first', () => {
    const config = parseConfig({
      ...base,
      TELEGRAM_ACCOUNTS: `family=${FAMILY},work=${WORK}`,
      DISCORD_ACCOUNTS: 'home=discord-home-SECRET',
    });
    const names = channelDoctorChecks(config).map((c) => c.name);
    expect(names).toEqual(
      expect.arrayContaining(['telegram', 'telegram-family', 'telegram-work', 'discord', 'discord-home']),
    );
    expect(names.indexOf('telegram')).toBeLessThan(names.indexOf('telegram-family'));
  });
});

const VARIABLES = { token: 'TELEGRAM_BOT_TOKEN', accounts: 'TELEGRAM_ACCOUNTS' };

describe('a bad TELEGRAM_ACCOUNTS or DISCORD_ACCOUNTS is one line, exit 2, without a token', () => {
  const cases: Array<[what: string, variable: string, value: string, says: RegExp]> = [
    ['an entry without "="', 'TELEGRAM_ACCOUNTS', `family=${FAMILY},${WORK}`, /entry 2 is not name=token/],
    ['a name with capitals', 'TELEGRAM_ACCOUNTS', `Family=${FAMILY}`, /1 to 20 lower-case letters or digits/],
    ['a name with "-"', 'DISCORD_ACCOUNTS', `my-work=${WORK}`, /1 to 20 lower-case letters or digits/],
    ['a name over 20 characters', 'TELEGRAM_ACCOUNTS', `${'a'.repeat(21)}=${FAMILY}`, /1 to 20/],
    ['a token written first', 'TELEGRAM_ACCOUNTS', `${FAMILY}=family`, /1 to 20/],
    ['a name given twice', 'TELEGRAM_ACCOUNTS', `family=${FAMILY},family=${WORK}`, /"family" is given twice/],
    ['one token for two names', 'DISCORD_ACCOUNTS', `home=${WORK},work=${WORK}`, /same token as "home"/],
    ['an empty token', 'TELEGRAM_ACCOUNTS', 'family=', /has no token/],
    ['an empty entry', 'TELEGRAM_ACCOUNTS', `family=${FAMILY},,work=${WORK}`, /entry 2 is not name=token/],
  ];
  for (const [what, variable, value, says] of cases) {
    it(`refuses ${what}`, () => {
      const err = refusal({ [variable]: value, TELEGRAM_BOT_TOKEN: '303:main-SECRET' });
      expect(err.exitCode).toBe(ExitCode.config);
      expect(ExitCode.config).toBe(2);
      expect(err.message).not.toMatch(/[\r\n]/);
      expect(err.message).toMatch(new RegExp(`^${variable} `));
      expect(err.message).toMatch(says);
      for (const secret of [FAMILY, WORK, '303:main-SECRET']) expect(err.message).not.toContain(secret);
    });
  }

  it('refuses an account holding the default bot’s token when the bots are built, without the token', () => {
    const config = parseConfig({
      ...base,
      TELEGRAM_BOT_TOKEN: FAMILY,
      TELEGRAM_ACCOUNTS: `family=${FAMILY}`,
    });
    let thrown: unknown;
    try {
      botInstances('telegram', config.channels.telegram, VARIABLES);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as Error).message).toMatch(
      /TELEGRAM_ACCOUNTS \("family"\) has the same token as TELEGRAM_BOT_TOKEN/,
    );
    expect((thrown as Error).message).not.toContain(FAMILY);
  });

  it('ends `magpie gateway` with exit 2 and one line on stderr', async () => {
    const root = path.resolve(import.meta.dirname, '../../..');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-accounts-exit-'));
    try {
      const outcome = await promisify(execFile)(
        process.execPath,
        ['--import', import.meta.resolve('tsx'), path.join(root, 'src/main.ts'), 'gateway'],
        {
          cwd: dir,
          env: {
            PATH: process.env.PATH,
            HOME: dir,
            MAGPIE_WORKSPACE: path.join(dir, 'workspace'),
            TELEGRAM_ACCOUNTS: `family=${FAMILY},Work=${WORK}`,
          },
        },
      ).then(
        () => ({ code: 0, stderr: '' }),
        (err: { code: number; stderr: string }) => err,
      );
      expect(outcome.code).toBe(2);
      const lines = outcome.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/TELEGRAM_ACCOUNTS entry 2: the name must be/);
      expect(outcome.stderr).not.toContain(FAMILY);
      expect(outcome.stderr).not.toContain(WORK);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe('live replies of an account', () => {
  it('follow the channel’s stream switch, over MAGPIE_STREAM', () => {
    const off = parseConfig({ ...base, MAGPIE_STREAM: 'on', TELEGRAM_STREAM: 'off' });
    expect(streamsTo(off, 'telegram-family')).toBe(false);
    expect(streamsTo(off, 'discord-work')).toBe(true);
    const on = parseConfig({ ...base, MAGPIE_STREAM: 'off', DISCORD_STREAM: 'on' });
    expect(streamsTo(on, 'discord-work')).toBe(true);
    expect(streamsTo(on, 'telegram-family')).toBe(false);
  });
});
