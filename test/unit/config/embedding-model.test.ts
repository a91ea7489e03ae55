/**
 * MAGPIE_EMBEDDING_MODEL: read like a MAGPIE_FALLBACK_MODELS entry (model,
 * model@url, model@url#KEY_VAR), its key taken from the named variable and
 * kept out of messages; a malformed value refused in one line naming
 * MAGPIE_EMBEDDING_MODEL (exit 2).
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { secretValues } from '../../../src/config/secrets.js';
import { ConfigError, ExitCode } from '../../../src/errors/index.js';

const base = {
  MAGPIE_WORKSPACE: '/tmp/magpie-embedding-ws',
  MAGPIE_TIMEZONE: 'UTC',
  OPENAI_API_KEY: 'sk-primary-key-123456',
  OPENAI_BASE_URL: 'https://api.openai.com/v1',
};

const embedding = (value: string | undefined, extra: Record<string, string> = {}) =>
  parseConfig(
    { ...base, ...extra, ...(value === undefined ? {} : { MAGPIE_EMBEDDING_MODEL: value }) },
    { llm: true },
  ).llm.embedding;

describe('MAGPIE_EMBEDDING_MODEL', () => {
  it('is off when unset or blank', () => {
    expect(embedding(undefined)).toBeUndefined();
    expect(embedding('  ')).toBeUndefined();
  });

  it('takes a bare model on the primary endpoint with its key', () => {
    expect(embedding('text-embedding-3-small')).toEqual({
      id: 'text-embedding-3-small',
      model: 'text-embedding-3-small',
      baseURL: 'https://api.openai.com/v1',
      apiKey: 'sk-primary-key-123456',
      setting: 'MAGPIE_EMBEDDING_MODEL',
      keyVar: 'OPENAI_API_KEY',
    });
  });

  it('takes model@url without a key, and model@url#VAR with the key from VAR (a secret)', () => {
    expect(embedding('nomic-embed-text@http://127.0.0.1:11434/v1')).toMatchObject({
      model: 'nomic-embed-text',
      baseURL: 'http://127.0.0.1:11434/v1',
      apiKey: undefined,
    });
    const env = {
      ...base,
      MAGPIE_EMBEDDING_MODEL: 'e5@https://embed.example/v1#EMBED_API_KEY',
      EMBED_API_KEY: 'ek-99-secret',
    };
    const config = parseConfig(env, { llm: true });
    expect(config.llm.embedding).toMatchObject({ apiKey: 'ek-99-secret', keyVar: 'EMBED_API_KEY' });
    expect(secretValues(config)).toContain('ek-99-secret');
  });

  it('refuses a malformed value in one line naming the variable', () => {
    for (const [value, why] of [
      ['e5@ftp://embed.example/v1', /must start with http:\/\/ or https:\/\//],
      ['e5@https://embed.example/v1#EMBED_API_KEY', /EMBED_API_KEY is not set/],
      ['e5@https://embed.example/v1#not a var', /after # comes the name of the variable/],
    ] as const) {
      let err: unknown;
      try {
        embedding(value);
      } catch (e) {
        err = e;
      }
      expect(err, value).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).message).toMatch(/^MAGPIE_EMBEDDING_MODEL entry "/);
      expect((err as ConfigError).message).toMatch(why);
      expect((err as ConfigError).message).not.toContain('\n');
      expect((err as ConfigError).exitCode).toBe(ExitCode.config);
    }
  });
});
