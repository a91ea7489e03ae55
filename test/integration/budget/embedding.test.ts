/**
 * Embedding calls count against the budget: memory search's passages and
 * queries, embedded through the real openai SDK at the stand-in server,
 * are settled on the real Redis budget store at the embedding model's
 * input price (MAGPIE_PRICES), under its own model id; at a limit the
 * search goes on by keywords and says why.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { memoryEmbedder } from '../../../src/app/memory-embedder.js';
import { Budget } from '../../../src/budget/budget.js';
import { RedisBudgetStore } from '../../../src/bus/budget-store.js';
import { silentLogger } from '../../../src/log/index.js';
import { MemoryIndex } from '../../../src/memory/search/memory-index.js';
import { type FakeEmbeddingServer, startFakeEmbeddings } from '../../fakes/embedding-server.js';

let redis: Redis;
let server: FakeEmbeddingServer;
let root: string;
beforeEach(async () => {
  redis = new Redis(inject('redisUrl'));
  server = await startFakeEmbeddings();
  root = mkdtempSync(path.join(os.tmpdir(), 'magpie-embed-budget-'));
  mkdirSync(path.join(root, 'ws', 'memory', '202403'), { recursive: true });
  writeFileSync(
    path.join(root, 'ws', 'memory', '202403', '20240309.md'),
    '# 2024-03-09\n\n- Bought a used Škoda estate from the garage in Braga.\n- Lunch with Ana.\n',
  );
});
afterEach(async () => {
  await server.close();
  redis.disconnect();
  rmSync(root, { recursive: true, force: true });
});

function setUp(env: Record<string, string>) {
  const config = parseConfig({
    MAGPIE_WORKSPACE: path.join(root, 'ws'),
    MAGPIE_STATE_DIR: path.join(root, 'state'),
    MAGPIE_TIMEZONE: 'UTC',
    OPENAI_API_KEY: 'sk-test',
    MAGPIE_EMBEDDING_MODEL: `stand-in-embed@${server.baseURL}`,
    MAGPIE_PRICES: 'stand-in-embed=2/2/0',
    MAGPIE_PRICE_INPUT: '100',
    MAGPIE_PRICE_OUTPUT: '100',
    ...env,
  });
  const store = new RedisBudgetStore(redis, `test-${randomUUID()}`);
  const logger = silentLogger();
  const budget = new Budget({ config: config.budget, store, timezone: 'UTC', logger });
  const embedder = memoryEmbedder(config, logger, budget);
  const index = new MemoryIndex({
    workspace: config.workspace,
    stateDir: config.stateDir,
    timezone: 'UTC',
    ...(embedder ? { embedder } : {}),
    embedAfterSearch: false,
  });
  return { budget, store, index };
}

describe('embedding calls and the budget', () => {
  it('settles passages and queries at the embedding model’s input price, under its id', async () => {
    const { budget, store, index } = setUp({ MAGPIE_BUDGET_DAILY: '10' });
    await index.embedPending();
    const result = await index.search('what car do I drive?');
    expect(result.keywordOnly).toBeUndefined();
    const tokens = server.inputs.reduce((n, t) => n + Math.ceil(t.length / 4), 0);
    const [day] = await store.days([budget.period().date]);
    expect(day?.byModel['stand-in-embed']).toMatchObject({
      calls: 2,
      promptTokens: tokens,
      completionTokens: 0,
    });
    // 2 per million input tokens (MAGPIE_PRICES), not MAGPIE_PRICE_INPUT's 100.
    expect(day?.byModel['stand-in-embed']?.cost).toBeCloseTo((tokens * 2) / 1_000_000, 9);
  });

  it('at a spent limit, calls no endpoint and searches by keywords, saying why', async () => {
    const { index } = setUp({ MAGPIE_BUDGET_DAILY_TOKENS: '5' });
    expect((await index.embedPending()).stopped).toBe(
      'a spending limit is reached, so the embedding model is not called',
    );
    expect(server.requests).toBe(0);
    const result = await index.search('Škoda');
    expect(result.hits[0]?.path).toBe('memory/202403/20240309.md');
  });
});
