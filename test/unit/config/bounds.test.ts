/**
 * Configuration bounds: every duration variable is above 0 and at most 24 h
 * (the heartbeat interval also takes 0 = off), no parsed duration overflows
 * Node's timers, REDIS_URL is redis:// or rediss:// only and OPENAI_BASE_URL
 * holds no credentials; each refusal is one line naming the variable, without
 * echoing a secret.
 */
import { describe, expect, it } from 'vitest';
import { EnvSchema, parseConfig } from '../../../src/app/config.js';
import { checkDuration, MAX_TIMER_MS, parseDuration } from '../../../src/config/duration.js';
import { streamsTo } from '../../../src/config/index.js';
import { ExitCode } from '../../../src/errors/index.js';
import { configRefusal } from '../../fakes/config.js';

const base = { MAGPIE_WORKSPACE: '/tmp/magpie-bounds-ws', MAGPIE_TIMEZONE: 'UTC' };

const refusal = (env: Record<string, string>) => configRefusal({ ...base, ...env });

/** Every duration variable in the schema (its default parses as a duration). */
const durationVariables = Object.keys(EnvSchema.shape).filter((name) => /_(TIMEOUT|INTERVAL)$/.test(name));

describe('parseDuration', () => {
  it('never returns more than a timer holds', () => {
    expect(parseDuration('999999h')).toBeUndefined();
    expect(parseDuration('25d')).toBeUndefined();
    expect(parseDuration(`${MAX_TIMER_MS + 1}ms`)).toBeUndefined();
    expect(parseDuration('99999999999999999999999999999999d')).toBeUndefined();
    expect(parseDuration(`${MAX_TIMER_MS}ms`)).toBe(MAX_TIMER_MS);
    expect(parseDuration('24d')).toBe(24 * 86_400_000);
  });

  it('still reads the ordinary forms', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration(' 1.5s ')).toBe(1500);
    expect(parseDuration('30m')).toBe(1_800_000);
    expect(parseDuration('0')).toBe(0);
    expect(parseDuration('-5s')).toBeUndefined();
    expect(parseDuration('5 minutes')).toBeUndefined();
  });
});

describe('checkDuration', () => {
  it.each([
    ['999999h', '"999999h" is too long; at most 24h'],
    ['25h', '"25h" is too long; at most 24h'],
    ['2d', '"2d" is too long; at most 24h'],
    ['0', '"0" must be above 0; use from 1ms to 24h'],
    ['0s', '"0s" must be above 0; use from 1ms to 24h'],
    ['0.1ms', '"0.1ms" rounds to 0 ms; use from 1ms to 24h'],
    ['soon', '"soon" is not a duration; use e.g. 45s, 30m or 2h (from 1ms to 24h)'],
  ])('refuses %s', (text, reason) => {
    expect(checkDuration(text)).toEqual({ ok: false, reason });
  });

  it('accepts the bounds themselves, and 0 only where allowed', () => {
    expect(checkDuration('24h')).toEqual({ ok: true, ms: 86_400_000 });
    expect(checkDuration('1d')).toEqual({ ok: true, ms: 86_400_000 });
    expect(checkDuration('1ms')).toEqual({ ok: true, ms: 1 });
    expect(checkDuration('0', { allowZero: true })).toEqual({ ok: true, ms: 0 });
    expect(checkDuration('0m', { allowZero: true })).toEqual({ ok: true, ms: 0 });
    expect(checkDuration('0.0001ms', { allowZero: true })).toMatchObject({ ok: false });
    expect(checkDuration('25h', { allowZero: true })).toMatchObject({ ok: false });
  });
});

describe('duration variables', () => {
  it('the schema has the known ones', () => {
    expect(durationVariables).toEqual(
      expect.arrayContaining(['MAGPIE_LLM_TIMEOUT', 'MAGPIE_EXEC_TIMEOUT', 'MAGPIE_HEARTBEAT_INTERVAL']),
    );
  });

  it('MAGPIE_EXEC_TIMEOUT=999999h is one line naming the variable, exit code 2', () => {
    const err = refusal({ MAGPIE_EXEC_TIMEOUT: '999999h' });
    expect(err.exitCode).toBe(ExitCode.config);
    expect(err.message).toBe(
      'MAGPIE_EXEC_TIMEOUT "999999h" is too long; at most 24h: fix it in .env (see .env.example)',
    );
    expect(err.message).not.toContain('\n');
  });

  it.each(durationVariables)('%s is refused above 24 h and at a value that rounds to 0', (name) => {
    for (const text of ['999999h', '1441m', '0.4ms']) {
      expect(refusal({ [name]: text }).message, `${name}=${text}`).toMatch(new RegExp(`^${name} "`));
    }
    expect(parseConfig({ ...base, [name]: '24h' })).toBeDefined();
  });

  it.each(durationVariables.filter((n) => n !== 'MAGPIE_HEARTBEAT_INTERVAL'))('%s refuses 0', (name) => {
    expect(refusal({ [name]: '0' }).message).toContain('must be above 0');
  });

  it('MAGPIE_HEARTBEAT_INTERVAL keeps 0 (and 0m) as off', () => {
    expect(parseConfig({ ...base, MAGPIE_HEARTBEAT_INTERVAL: '0' }).heartbeat.intervalMs).toBe(0);
    expect(parseConfig({ ...base, MAGPIE_HEARTBEAT_INTERVAL: '0m' }).heartbeat.intervalMs).toBe(0);
    expect(parseConfig({ ...base, MAGPIE_HEARTBEAT_INTERVAL: '1s' }).heartbeat.intervalMs).toBe(1000);
  });

  it('the defaults parse within the bounds', () => {
    const config = parseConfig(base);
    expect(config.llm.timeoutMs).toBe(120_000);
    expect(config.tools.execTimeoutMs).toBe(60_000);
    expect(config.heartbeat.intervalMs).toBe(1_800_000);
  });
});

describe('REDIS_URL', () => {
  it.each(['redis://127.0.0.1:6379', 'rediss://:pw@cache.example:6380/2', 'redis://user:pw@10.0.0.5'])(
    'accepts %s',
    (url) => {
      expect(parseConfig({ ...base, REDIS_URL: url }).redis.url).toBe(url);
    },
  );

  it.each([
    ['http://:hunter2secret@127.0.0.1:6379', 'http:'],
    ['https://127.0.0.1:6379', 'https:'],
    ['unix:///var/run/redis.sock', 'unix:'],
    ['tcp://127.0.0.1:6379', 'tcp:'],
    ['valkey://127.0.0.1', 'valkey:'],
  ])('refuses %s in one line naming the variable, without the URL', (url, scheme) => {
    const err = refusal({ REDIS_URL: url });
    expect(err.exitCode).toBe(ExitCode.config);
    expect(err.message).toBe(
      `REDIS_URL must start with redis:// or rediss:// (not ${scheme}//), e.g. redis://127.0.0.1:6379: fix it in .env (see .env.example)`,
    );
    expect(err.message).not.toContain('hunter2secret');
  });

  it('refuses text that is not a URL', () => {
    expect(refusal({ REDIS_URL: '127.0.0.1:6379' }).message).toMatch(/^REDIS_URL is not a URL/);
  });
});

describe('OPENAI_BASE_URL', () => {
  it('refuses a user name or password without printing them', () => {
    const err = refusal({ OPENAI_BASE_URL: 'https://alice:s3cretpass@llm.example/v1' });
    expect(err.message).toMatch(/^OPENAI_BASE_URL holds a user name or password/);
    expect(err.message).not.toContain('s3cretpass');
    expect(err.message).not.toContain('alice');
  });

  it('refuses schemes other than http and https', () => {
    expect(refusal({ OPENAI_BASE_URL: 'ftp://llm.example/v1' }).message).toMatch(
      /^OPENAI_BASE_URL must start with http:\/\/ or https:\/\//,
    );
  });

  it('accepts a local http endpoint', () => {
    expect(parseConfig({ ...base, OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1' }).llm.baseURL).toBe(
      'http://127.0.0.1:11434/v1',
    );
  });
});

describe('live reply switches', () => {
  it('streams everywhere by default, MAGPIE_STREAM=off stops it, a channel switch wins over it', () => {
    expect(streamsTo(parseConfig({}), 'telegram')).toBe(true);
    const off = parseConfig({ MAGPIE_STREAM: 'off', TELEGRAM_STREAM: 'on' });
    expect([streamsTo(off, 'telegram'), streamsTo(off, 'discord')]).toEqual([true, false]);
    const oneOff = parseConfig({ DISCORD_STREAM: 'false' });
    expect([streamsTo(oneOff, 'telegram'), streamsTo(oneOff, 'discord')]).toEqual([true, false]);
  });

  it('refuses a switch that is neither on nor off, naming it', () => {
    expect(() => parseConfig({ TELEGRAM_STREAM: 'sometimes' })).toThrow(/TELEGRAM_STREAM/);
  });
});
