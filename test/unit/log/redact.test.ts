/**
 * Credentials never reach a log line or an error line: a real pino logger
 * writing into a stream, describeError, the provider's connection errors and
 * the doctor's output, with passwords in REDIS_URL, user info and key
 * parameters in URLs, and the configured secret values in any spelling.
 */
import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { secretValues, urlCredentials } from '../../../src/config/secrets.js';
import { AppError, describeError } from '../../../src/errors/index.js';
import { createLogger, REDACTED, redactText, scrubCredentials } from '../../../src/log/index.js';
import { failed, runChecks } from '../../../src/ops/doctor.js';
import { OpenAIProvider } from '../../../src/providers/openai/provider.js';

const REDIS_PASSWORD = 'hunter2-redis-pw';
const API_KEY = 'sk-test-0123456789abcdefghij';
const QUERY_KEY = 'qk-9f8e7d6c5b4a';
const TELEGRAM_TOKEN = '123456789:AAHfakeTelegramTokenForTests0123456789';
const TG_ROOT_PASSWORD = 'tg-root-pass-77';
const DASHBOARD_TOKEN = 'dash-token-5566';
const BRAVE_KEY = 'brave-key-8899';

const config = parseConfig({
  MAGPIE_WORKSPACE: '/tmp/magpie-redact-ws',
  MAGPIE_TIMEZONE: 'UTC',
  OPENAI_API_KEY: API_KEY,
  OPENAI_BASE_URL: `https://llm.example/v1?api_key=${QUERY_KEY}`,
  REDIS_URL: `redis://magpie:${REDIS_PASSWORD}@10.0.0.5:6379/0`,
  TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
  TELEGRAM_API_ROOT: `https://proxy:${TG_ROOT_PASSWORD}@tg.example`,
  MAGPIE_DASHBOARD_TOKEN: DASHBOARD_TOKEN,
  BRAVE_API_KEY: BRAVE_KEY,
});
const SECRETS = [
  REDIS_PASSWORD,
  API_KEY,
  QUERY_KEY,
  TELEGRAM_TOKEN,
  TG_ROOT_PASSWORD,
  DASHBOARD_TOKEN,
  BRAVE_KEY,
];

/** A real pino logger (createLogger) writing JSON lines into memory. */
function memoryLogger(secrets = secretValues(config)) {
  let text = '';
  const destination = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  const logger = createLogger({ level: 'debug', destination, secrets });
  return { logger, output: () => text };
}

function expectNoSecrets(text: string): void {
  for (const secret of SECRETS) {
    expect(text).not.toContain(secret);
    expect(text).not.toContain(encodeURIComponent(secret));
  }
}

describe('scrubCredentials', () => {
  it.each([
    ['redis://:pw-secret@127.0.0.1:6379', 'redis://[redacted]@127.0.0.1:6379'],
    ['rediss://user:pw-secret@cache.example:6380/2', 'rediss://[redacted]@cache.example:6380/2'],
    ['see http://alice:p@ss-secret@host.example/x now', 'see http://[redacted]@host.example/x now'],
    ['https://token-only@host.example', 'https://[redacted]@host.example'],
    ['https://h.example/v1?api_key=abc123&model=x', 'https://h.example/v1?api_key=[redacted]&model=x'],
    [
      'https://h.example/?access_token=abc&X-Amz-Signature=def',
      'https://h.example/?access_token=[redacted]&X-Amz-Signature=[redacted]',
    ],
    ['Authorization: Bearer abcdefghijkl', 'Authorization: [redacted]'],
    ['sent Bearer abcdefghijkl upstream', 'sent Bearer [redacted] upstream'],
    [
      'GET https://api.telegram.org/bot123456789:AAHfakeTelegramTokenForTests0123456789/getMe',
      'GET https://api.telegram.org/bot[redacted]/getMe',
    ],
    ['key sk-proj-abcdefghijklmnop1234 leaked', 'key [redacted] leaked'],
  ])('%s', (text, expected) => {
    expect(scrubCredentials(text)).toBe(expected);
  });

  it('leaves ordinary text and URLs alone', () => {
    for (const text of [
      'https://example.com/a@b',
      'mail me at user@example.com',
      'fetched https://example.com/page?q=cats&page=2',
      'at 12:30 the task-list ran',
      'Basic information about cats',
    ]) {
      expect(scrubCredentials(text)).toBe(text);
    }
  });
});

describe('redactText', () => {
  it('removes configured values raw, URL-encoded and JSON-escaped', () => {
    const secret = 'p@ss"w/rd-long';
    const text = `a ${secret} b ${encodeURIComponent(secret)} c ${JSON.stringify(secret)}`;
    const out = redactText(text, [secret]);
    expect(out).not.toContain('ss"w');
    expect(out).not.toContain('ss%22w');
    expect(out).not.toContain('ss\\"w');
    expect(out.match(/\[redacted\]/g)).toHaveLength(3);
  });
});

describe('secretValues', () => {
  it('lists keys, tokens and the credentials inside configured URLs, not plain user names', () => {
    expect(secretValues(config)).toEqual(expect.arrayContaining(SECRETS));
    expect(secretValues(config)).not.toContain('magpie');
    expect(secretValues(config)).not.toContain('proxy');
    expect(urlCredentials('redis://:p%40ss@h:1')).toEqual(['p%40ss', 'p@ss']);
    expect(urlCredentials('redis://magpie:pw-1234@h:1')).toEqual(['pw-1234']);
    expect(urlCredentials('https://tok_abcdefghijklmnop@h.example')).toEqual(['tok_abcdefghijklmnop']);
    expect(urlCredentials('https://bob@h.example')).toEqual([]);
    const local = parseConfig({ MAGPIE_WORKSPACE: '/tmp/x', OPENAI_API_KEY: 'none' });
    expect(secretValues(local)).toEqual([]);
    expect(urlCredentials('https://h.example/v1?model=x&key=k1234')).toEqual(['k1234']);
    expect(urlCredentials(undefined)).toEqual([]);
  });
});

describe('the logger', () => {
  it('scrubs credentials from the message, fields, err.message, err.stack and child bindings', () => {
    const { logger, output } = memoryLogger();
    const redisUrl = config.redis.url!;
    logger.info(`connecting to ${redisUrl}`);
    logger.info(
      { url: redisUrl, nested: { endpoint: config.llm.baseURL, list: [config.channels.telegram.apiRoot] } },
      'fields',
    );
    logger.error({ err: new AppError('REDIS_UNAVAILABLE', `Redis at ${redisUrl} is unreachable`) }, 'failed');
    logger.warn(
      new TypeError(
        `Request cannot be constructed from a URL that includes credentials: ${config.channels.telegram.apiRoot}/bot${TELEGRAM_TOKEN}/getMe`,
      ),
    );
    logger.child({ endpoint: redisUrl }).info('child line');
    logger.info(
      `bare values: ${REDIS_PASSWORD} ${API_KEY} ${DASHBOARD_TOKEN} ${encodeURIComponent(TG_ROOT_PASSWORD)}`,
    );
    logger.info({ token: TELEGRAM_TOKEN, headers: { authorization: `Bearer ${API_KEY}` } }, 'redacted paths');
    const text = output();
    const lines = text.trim().split('\n');
    expect(lines).toHaveLength(7);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expectNoSecrets(text);
    const [first, fields, failure, , child] = lines.map((l) => JSON.parse(l));
    expect(first.msg).toBe('connecting to redis://[redacted]@10.0.0.5:6379/0');
    expect(fields.nested.endpoint).toBe(`https://llm.example/v1?api_key=${REDACTED}`);
    expect(failure.err.stack).toContain('redis://[redacted]@10.0.0.5');
    expect(child.endpoint).toBe('redis://[redacted]@10.0.0.5:6379/0');
  });

  it('scrubs URL credentials even with no secrets configured', () => {
    const { logger, output } = memoryLogger([]);
    logger.info({ url: 'redis://:unlisted-pw-123@127.0.0.1:6379' }, 'start');
    expect(output()).not.toContain('unlisted-pw-123');
    expect(output()).toContain('redis://[redacted]@127.0.0.1:6379');
  });
});

describe('error lines', () => {
  it('describeError takes credentials out of any message', () => {
    const err = new Error(`connect to redis://:${REDIS_PASSWORD}@10.0.0.5:6379 failed\nat somewhere`);
    expect(describeError(err)).toBe('connect to redis://[redacted]@10.0.0.5:6379 failed');
    expect(describeError(`GET https://h.example/x?token=${QUERY_KEY}`)).toBe(
      'GET https://h.example/x?token=[redacted]',
    );
  });

  it('an unreachable endpoint with a key in its URL gives an error line without the key', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const provider = new OpenAIProvider({
      apiKey: API_KEY,
      baseURL: `http://127.0.0.1:${port}/v1?api_key=${QUERY_KEY}`,
      model: 'fake-model',
      maxRetries: 0,
    });
    const err = await provider.chat({ messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    const line = describeError(err);
    expect(line).toContain(`cannot reach the model endpoint http://127.0.0.1:${port}/v1?api_key=[redacted]`);
    expectNoSecrets(line);
    expectNoSecrets((err as Error).message);
  });

  it("the doctor's lines never show a URL credential or a configured secret", async () => {
    const [line] = await runChecks(
      [
        {
          name: 'redis',
          run: async () =>
            failed(
              `unreachable at ${config.redis.url}`,
              `check ${config.channels.telegram.apiRoot}/bot${TELEGRAM_TOKEN}`,
            ),
        },
      ],
      { secrets: secretValues(config) },
    );
    expectNoSecrets(`${line!.detail} ${line!.fix}`);
    expect(line!.detail).toBe('unreachable at redis://[redacted]@10.0.0.5:6379/0');
  });
});
