/**
 * `magpie doctor [--live]` checks every configured model: each endpoint lists
 * its model, each answers one token with --live, and a failing fallback is a
 * ✗ whose fix names its own setting (the entry in MAGPIE_FALLBACK_MODELS, its
 * #VAR key) — never the key itself. Against fake OpenAI servers.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { secretValues } from '../../../src/config/secrets.js';
import { formatChecks, runChecks } from '../../../src/ops/doctor.js';
import { modelChecks } from '../../../src/ops/doctor-models.js';
import { closedPort } from '../../fakes/net.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../fakes/openai-server.js';

let main: FakeOpenAI;
let mistral: FakeOpenAI;
let local: FakeOpenAI;

beforeEach(async () => {
  [main, mistral, local] = await Promise.all([
    startFakeOpenAI({ models: ['main-model'], apiKey: 'sk-main-key-123456' }),
    startFakeOpenAI({ models: ['mistral-large'], apiKey: 'mistral-key-abcdef-99' }),
    startFakeOpenAI({ models: ['llama3.1', 'qwen2'] }),
  ]);
});
afterEach(async () => {
  await Promise.all([main.close(), mistral.close(), local.close()]);
});

function config(fallbacks: string, extra: Record<string, string> = {}) {
  return parseConfig({
    MAGPIE_WORKSPACE: '/tmp/magpie-doctor-models',
    MAGPIE_TIMEZONE: 'UTC',
    OPENAI_API_KEY: 'sk-main-key-123456',
    OPENAI_BASE_URL: main.baseURL,
    MAGPIE_MODEL: 'main-model',
    MAGPIE_FALLBACK_MODELS: fallbacks,
    MISTRAL_API_KEY: 'mistral-key-abcdef-99',
    ...extra,
  });
}

async function doctor(c: ReturnType<typeof config>, live: boolean): Promise<string> {
  const text = formatChecks(await runChecks(modelChecks(c, live), { secrets: secretValues(c) }));
  for (const secret of ['sk-main-key-123456', 'mistral-key-abcdef-99']) expect(text).not.toContain(secret);
  return text;
}

describe('doctor: every configured model', () => {
  it('checks that each endpoint lists its model, and with --live that each answers', async () => {
    const c = config(`mistral-large@${mistral.baseURL}#MISTRAL_API_KEY, llama3.1@${local.baseURL}`);
    const text = await doctor(c, true);
    expect(text).toMatch(/^✓ llm endpoint +http:\/\/127\.0\.0\.1:\d+\/v1 lists main-model$/m);
    expect(text).toMatch(/^✓ fallback mistral-large +http:\/\/127\.0\.0\.1:\d+\/v1 lists mistral-large$/m);
    expect(text).toMatch(/^✓ fallback llama3\.1 +http:\/\/127\.0\.0\.1:\d+\/v1 lists llama3\.1$/m);
    expect(text).toMatch(/^✓ llm live +one-token completion from main-model/m);
    expect(text).toMatch(/^✓ fallback mistral-large live +one-token completion from mistral-large/m);
    expect(text).toMatch(/^✓ fallback llama3\.1 live +one-token completion from llama3\.1/m);
    expect(text).toContain('All checks passed.');
    for (const fake of [main, mistral, local]) {
      expect(fake.requests).toHaveLength(1);
      expect(fake.requests[0]?.body.max_tokens).toBe(1);
    }
    expect(local.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('names the fallback’s own settings when it fails', async () => {
    const dead = `http://127.0.0.1:${await closedPort()}/v1`;
    const c = config(`gone@${dead}, qwen-max@${local.baseURL}, mistral-large@${mistral.baseURL}#WRONG_KEY`, {
      WRONG_KEY: 'not-the-mistral-key-77',
    });
    const text = await doctor(c, false);
    expect(text).toMatch(/^✗ fallback gone +.*ECONNREFUSED/m);
    expect(text).toContain(
      `fix: start the LLM server or fix the URL of gone in MAGPIE_FALLBACK_MODELS (now ${dead})`,
    );
    expect(text).toMatch(/^✗ fallback qwen-max +.* does not list the model "qwen-max" \(llama3\.1, qwen2\)/m);
    expect(text).toContain(
      'fix: set the model of this entry in MAGPIE_FALLBACK_MODELS to one of the listed models',
    );
    expect(text).toMatch(/^✗ fallback mistral-large /m);
    expect(text).toContain(
      `fix: the endpoint refused the key: put a valid WRONG_KEY in .env for ${mistral.baseURL}`,
    );
    expect(text).not.toContain('not-the-mistral-key-77');
    expect(text).toContain('3 checks failed.');
  });

  it('tells how to give a key to a fallback entry that has none', async () => {
    const text = await doctor(config(`mistral-large@${mistral.baseURL}`), false);
    expect(text).toContain(
      'fix: the endpoint wants a key: end the entry mistral-large in MAGPIE_FALLBACK_MODELS with #VAR and put the key in VAR in .env',
    );
  });

  it('reports a fallback key variable that is not set, and skips its live check', async () => {
    const c = config(`mistral-large@${mistral.baseURL}#UNSET_MISTRAL_KEY`);
    const text = await doctor(c, true);
    expect(text).toMatch(/^✗ fallback mistral-large +UNSET_MISTRAL_KEY is not set$/m);
    expect(text).toMatch(/^– fallback mistral-large live +UNSET_MISTRAL_KEY is not set$/m);
    expect(mistral.requests).toHaveLength(0);
  });
});

describe('doctor: prices under a money limit', () => {
  it('warns, without failing, when a money limit is set and a model that may answer has no price', async () => {
    const c = config(`llama3.1@${local.baseURL}`, {
      MAGPIE_BUDGET_DAILY: '2',
      MAGPIE_PRICES: 'main-model=1/0.5/2',
    });
    const lines = await runChecks(modelChecks(c, false), { secrets: secretValues(c) });
    expect(lines.find((l) => l.name === 'budget prices')?.status).toBe('warn');
    const text = formatChecks(lines);
    expect(text).toMatch(
      /^! budget prices +a money limit \(MAGPIE_BUDGET_\*\) is set but llama3\.1 has no price: its calls count tokens only, not against the money limit$/m,
    );
    expect(text).toContain('fix: add llama3.1=INPUT/CACHED/OUTPUT to MAGPIE_PRICES (per million tokens)');
    expect(text).toContain('All checks passed (1 warning).');
  });

  it('passes when every model has a price (its own or MAGPIE_PRICE_*), and is not run without a money limit', async () => {
    const priced = config(`llama3.1@${local.baseURL}`, {
      MAGPIE_BUDGET_MONTHLY: '30',
      MAGPIE_PRICES: 'llama3.1=0/0/0',
      MAGPIE_PRICE_INPUT: '1',
      MAGPIE_PRICE_OUTPUT: '2',
    });
    expect(await doctor(priced, false)).toMatch(
      /^✓ budget prices +every model that may answer has a price for the money limits$/m,
    );
    const tokensOnly = config(`llama3.1@${local.baseURL}`, { MAGPIE_BUDGET_DAILY_TOKENS: '1000' });
    expect(await doctor(tokensOnly, false)).not.toContain('budget prices');
  });
});

describe('doctor: the embedding model', () => {
  it('shows it, and with --live gets one vector from it; a dead endpoint is a ✗ naming the setting', async () => {
    const { startFakeEmbeddings } = await import('../../fakes/embedding-server.js');
    const embeddings = await startFakeEmbeddings();
    try {
      const c = config('', {
        MAGPIE_EMBEDDING_MODEL: `stand-in-embed@${embeddings.baseURL}#MISTRAL_API_KEY`,
      });
      const shown = await doctor(c, false);
      expect(shown).toMatch(
        /^✓ embedding model +memory search by meaning with stand-in-embed on http:\/\/127\.0\.0\.1:\d+\/v1/m,
      );
      expect(embeddings.requests).toBe(0);
      const live = await doctor(c, true);
      expect(live).toMatch(/^✓ embedding live +a 256-number vector from stand-in-embed in \d+ ms$/m);
      expect(embeddings.inputs).toEqual(['magpie doctor']);
      await embeddings.close();
      const down = await doctor(c, true);
      expect(down).toMatch(/^✗ embedding live +cannot reach the model endpoint/m);
      expect(down).toContain('fix MAGPIE_EMBEDDING_MODEL in .env');
    } finally {
      await embeddings.close();
    }
  });
});
