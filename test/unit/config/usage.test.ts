/**
 * MAGPIE_PROMPT_CACHE and the MAGPIE_PRICE_* variables: defaults, accepted
 * values, and one clear line (exit 2) for each bad one.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { ExitCode } from '../../../src/errors/index.js';
import { configRefusal } from '../../fakes/config.js';

const base = { MAGPIE_WORKSPACE: '/tmp/magpie-usage-ws', MAGPIE_TIMEZONE: 'UTC' };

const refusal = (env: Record<string, string>) => configRefusal({ ...base, ...env });

describe('MAGPIE_PROMPT_CACHE', () => {
  it('is auto by default and takes auto or off in any case', () => {
    expect(parseConfig(base).llm.promptCache).toBe('auto');
    expect(parseConfig({ ...base, MAGPIE_PROMPT_CACHE: '' }).llm.promptCache).toBe('auto');
    expect(parseConfig({ ...base, MAGPIE_PROMPT_CACHE: ' OFF ' }).llm.promptCache).toBe('off');
  });

  it('refuses anything else with one line naming the variable', () => {
    const err = refusal({ MAGPIE_PROMPT_CACHE: 'on' });
    expect(err.exitCode).toBe(ExitCode.config);
    expect(err.message).toBe(
      'MAGPIE_PROMPT_CACHE "on" must be auto or off: fix it in .env (see .env.example)',
    );
  });
});

describe('MAGPIE_PRICE_*', () => {
  it('gives no prices when none is set', () => {
    expect(parseConfig(base).prices).toBeUndefined();
    expect(parseConfig({ ...base, MAGPIE_PRICE_INPUT: '', MAGPIE_PRICE_OUTPUT: ' ' }).prices).toBeUndefined();
  });

  it('reads input, cached input and output per million tokens; cached input defaults to the input price', () => {
    expect(
      parseConfig({
        ...base,
        MAGPIE_PRICE_INPUT: '2.5',
        MAGPIE_PRICE_CACHED_INPUT: '0.25',
        MAGPIE_PRICE_OUTPUT: '10',
      }).prices,
    ).toEqual({ input: 2.5, cachedInput: 0.25, output: 10 });
    expect(parseConfig({ ...base, MAGPIE_PRICE_INPUT: '0.15', MAGPIE_PRICE_OUTPUT: '0.6' }).prices).toEqual({
      input: 0.15,
      cachedInput: 0.15,
      output: 0.6,
    });
    expect(parseConfig({ ...base, MAGPIE_PRICE_INPUT: '0', MAGPIE_PRICE_OUTPUT: '0' }).prices).toEqual({
      input: 0,
      cachedInput: 0,
      output: 0,
    });
  });

  it('refuses a negative or non-numeric price, naming the variable', () => {
    for (const [name, value] of [
      ['MAGPIE_PRICE_INPUT', '-1'],
      ['MAGPIE_PRICE_OUTPUT', 'ten'],
      ['MAGPIE_PRICE_CACHED_INPUT', 'Infinity'],
      ['MAGPIE_PRICE_INPUT', '1e999'],
    ] as const) {
      const err = refusal({ MAGPIE_PRICE_INPUT: '1', MAGPIE_PRICE_OUTPUT: '1', [name]: value });
      expect(err.exitCode).toBe(ExitCode.config);
      expect(err.message).toMatch(new RegExp(`^${name} ".*" is not a price`));
    }
  });

  it('refuses half a price list: input without output, output without input, cached alone', () => {
    expect(refusal({ MAGPIE_PRICE_INPUT: '1' }).message).toMatch(/^MAGPIE_PRICE_OUTPUT is not set/);
    expect(refusal({ MAGPIE_PRICE_OUTPUT: '1' }).message).toMatch(/^MAGPIE_PRICE_INPUT is not set/);
    const cachedOnly = refusal({ MAGPIE_PRICE_CACHED_INPUT: '0.1' });
    expect(cachedOnly.message).toMatch(/^MAGPIE_PRICE_INPUT is not set/);
    expect(cachedOnly.exitCode).toBe(ExitCode.config);
  });

  it('lists every variable in .env.example', () => {
    const example = readFileSync(new URL('../../../.env.example', import.meta.url), 'utf8');
    for (const name of [
      'MAGPIE_PROMPT_CACHE',
      'MAGPIE_PRICE_INPUT',
      'MAGPIE_PRICE_CACHED_INPUT',
      'MAGPIE_PRICE_OUTPUT',
    ])
      expect(example).toMatch(new RegExp(`^${name}=`, 'm'));
  });
});
