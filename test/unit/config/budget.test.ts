/** MAGPIE_BUDGET_*, MAGPIE_MAX_CALLS_PER_MINUTE and MAGPIE_PRICES: parsed values, and one line for a bad one. */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { priceOf } from '../../../src/config/budget.js';
import { ExitCode } from '../../../src/errors/index.js';
import { configRefusal } from '../../fakes/config.js';

describe('budget settings', () => {
  it('reads the limits and per-model prices; a model without its own entry takes MAGPIE_PRICE_*', () => {
    const { budget } = parseConfig({
      MAGPIE_BUDGET_DAILY: '2.00',
      MAGPIE_BUDGET_MONTHLY: '30',
      MAGPIE_BUDGET_CHAT_DAILY: '0.50',
      MAGPIE_BUDGET_DAILY_TOKENS: '2000000',
      MAGPIE_PRICES: 'gpt-4o-mini=0.15/0.075/0.60, llama3.1=0/0/0',
      MAGPIE_PRICE_INPUT: '1',
      MAGPIE_PRICE_OUTPUT: '3',
    });
    expect(budget).toMatchObject({
      daily: 2,
      monthly: 30,
      chatDaily: 0.5,
      dailyTokens: 2_000_000,
      maxCallsPerMinute: 30,
    });
    expect(priceOf(budget, 'gpt-4o-mini')).toEqual({ input: 0.15, cachedInput: 0.075, output: 0.6 });
    expect(priceOf(budget, 'local', 'llama3.1')).toEqual({ input: 0, cachedInput: 0, output: 0 });
    expect(priceOf(budget, 'other')).toEqual({ input: 1, cachedInput: 1, output: 3 });
    expect(priceOf(parseConfig({ MAGPIE_PRICES: 'a=1/1/1' }).budget, 'b')).toBeUndefined();
  });

  it.each([
    ['MAGPIE_BUDGET_DAILY', '-1'],
    ['MAGPIE_BUDGET_MONTHLY', 'lots'],
    ['MAGPIE_BUDGET_CHAT_DAILY', '0'],
    ['MAGPIE_BUDGET_DAILY_TOKENS', '1.5'],
    ['MAGPIE_MAX_CALLS_PER_MINUTE', '0'],
    ['MAGPIE_PRICES', 'gpt-4o-mini=0.15/0.60'],
    ['MAGPIE_PRICES', 'gpt-4o-mini=0.15/x/0.60'],
    ['MAGPIE_PRICES', '=1/1/1'],
    ['MAGPIE_PRICES', 'a=1/1/1, b=1/-2/1'],
  ])('%s=%s stops start-up with one line naming it (exit 2)', (name, value) => {
    const err = configRefusal({ [name]: value });
    expect(err.exitCode).toBe(ExitCode.config);
    expect(err.message).toContain(name);
    expect(err.message).not.toMatch(/\n/);
  });
});
