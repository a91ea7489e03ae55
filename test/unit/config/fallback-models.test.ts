/**
 * MAGPIE_FALLBACK_MODELS: the three entry forms of the issue, keys read from
 * the named variable (and redacted), ids for /model, and every malformed
 * entry refused with one line naming it (exit 2) without echoing a secret.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { secretValues } from '../../../src/config/secrets.js';
import { ConfigError, describeError, ExitCode } from '../../../src/errors/index.js';

const base = {
  MAGPIE_WORKSPACE: '/tmp/magpie-fallback-ws',
  MAGPIE_TIMEZONE: 'UTC',
  OPENAI_API_KEY: 'sk-primary-key-123456',
  OPENAI_BASE_URL: 'https://openrouter.ai/api/v1',
  MAGPIE_MODEL: 'anthropic/claude-sonnet-4',
};

function models(value: string, extra: Record<string, string> = {}) {
  return parseConfig({ ...base, ...extra, MAGPIE_FALLBACK_MODELS: value }, { llm: true }).llm.models;
}

function refusal(value: string, extra: Record<string, string> = {}): ConfigError {
  try {
    models(value, extra);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new ConfigError(`expected ${value} to be refused`);
}

describe('MAGPIE_FALLBACK_MODELS', () => {
  it('reads the example of the issue: same endpoint, another endpoint, another endpoint with its key', () => {
    const list = models(
      'openai/gpt-4o-mini, llama3.1@http://127.0.0.1:11434/v1, mistral-large@https://api.mistral.ai/v1#MISTRAL_API_KEY',
      { MISTRAL_API_KEY: 'mistral-secret-987654' },
    );
    expect(list.map((m) => [m.id, m.model, m.baseURL, m.apiKey, m.keyVar])).toEqual([
      [
        'anthropic/claude-sonnet-4',
        'anthropic/claude-sonnet-4',
        base.OPENAI_BASE_URL,
        base.OPENAI_API_KEY,
        'OPENAI_API_KEY',
      ],
      [
        'openai/gpt-4o-mini',
        'openai/gpt-4o-mini',
        base.OPENAI_BASE_URL,
        base.OPENAI_API_KEY,
        'OPENAI_API_KEY',
      ],
      ['llama3.1', 'llama3.1', 'http://127.0.0.1:11434/v1', undefined, undefined],
      [
        'mistral-large',
        'mistral-large',
        'https://api.mistral.ai/v1',
        'mistral-secret-987654',
        'MISTRAL_API_KEY',
      ],
    ]);
    expect(list[0]?.setting).toBe('MAGPIE_MODEL');
    expect(list[3]?.setting).toBe('MAGPIE_FALLBACK_MODELS');
  });

  it('has only the primary when unset or blank, and ignores empty items (a trailing comma)', () => {
    expect(parseConfig(base, { llm: true }).llm.models).toHaveLength(1);
    expect(models('   ')).toHaveLength(1);
    expect(models('gpt-4o-mini,').map((m) => m.id)).toEqual(['anthropic/claude-sonnet-4', 'gpt-4o-mini']);
  });

  it('keeps an @ that does not begin a URL in the model name (Vertex dates, Cloudflare names)', () => {
    const list = models('claude-3-5-sonnet@20240620, @cf/meta/llama-3-8b@http://127.0.0.1:9000/v1');
    expect(list[1]).toMatchObject({ model: 'claude-3-5-sonnet@20240620', baseURL: base.OPENAI_BASE_URL });
    expect(list[2]).toMatchObject({ model: '@cf/meta/llama-3-8b', baseURL: 'http://127.0.0.1:9000/v1' });
  });

  it('gives `model#VAR` the primary endpoint with that key', () => {
    const list = models('gpt-4o#OTHER_KEY', { OTHER_KEY: 'sk-other-key-abcdef' });
    expect(list[1]).toMatchObject({
      baseURL: base.OPENAI_BASE_URL,
      apiKey: 'sk-other-key-abcdef',
      keyVar: 'OTHER_KEY',
    });
  });

  it('tells two entries of one model apart by host, then by URL', () => {
    const list = models(
      'llama3.1@http://10.0.0.5:11434/v1, llama3.1@http://10.0.0.6:11434/v1, qwen@http://h:1/a, qwen@http://h:1/b',
    );
    expect(list.map((m) => m.id).slice(1)).toEqual([
      'llama3.1@10.0.0.5:11434',
      'llama3.1@10.0.0.6:11434',
      'qwen@http://h:1/a',
      'qwen@http://h:1/b',
    ]);
  });

  it('puts fallback keys among the secrets to redact', () => {
    const config = parseConfig(
      { ...base, MAGPIE_FALLBACK_MODELS: 'm@http://127.0.0.1:1/v1#K2', K2: 'fallback-secret-key-42' },
      { llm: true },
    );
    expect(secretValues(config)).toContain('fallback-secret-key-42');
  });

  it('needs a #VAR key only for commands that call the model', () => {
    const env = { ...base, MAGPIE_FALLBACK_MODELS: 'm@http://127.0.0.1:1/v1#UNSET_KEY_VAR' };
    expect(parseConfig(env).llm.models[1]?.apiKey).toBeUndefined();
    expect(() => parseConfig(env, { llm: true })).toThrow(/UNSET_KEY_VAR is not set/);
  });

  it.each([
    ['llama3.1@127.0.0.1:11434/v1', /after @ comes the endpoint URL with http:\/\/ or https:\/\//],
    ['llama3.1@ftp://127.0.0.1/v1', /must start with http:\/\/ or https:\/\//],
    ['llama3.1@http://', /is not a URL/],
    ['@http://127.0.0.1:1/v1', /the model name is missing/],
    ['gpt-4o#', /after # comes the name of the variable/],
    ['gpt-4o#MY-KEY', /after # comes the name of the variable/],
    ['gpt 4o', /is not a model name/],
    [`${'x'.repeat(201)}`, /is not a model name/],
    ['anthropic/claude-sonnet-4', /listed \(it is MAGPIE_MODEL\)/],
    ['gpt-4o, gpt-4o', /listed twice/],
    ['m@http://127.0.0.1:1/v1, m@http://127.0.0.1:1/v1/', /listed twice/],
  ])('refuses %s with one line (exit 2)', (value, reason) => {
    const err = refusal(value);
    expect(err.exitCode).toBe(ExitCode.config);
    expect(err.message).toMatch(/^MAGPIE_FALLBACK_MODELS entry "/);
    expect(err.message).toMatch(reason);
    expect(err.message).not.toContain('\n');
  });

  it('refuses credentials in an entry URL and never shows the password', () => {
    const err = refusal('m@http://user:hunter2-secret@127.0.0.1:1/v1');
    expect(err.message).toMatch(/user name or password; name the key with #VAR/);
    expect(describeError(err)).not.toContain('hunter2-secret');
  });
});
