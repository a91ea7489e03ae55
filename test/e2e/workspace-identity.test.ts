/**
 * Several machines, honestly, with the built CLI: `magpie init` gives the
 * workspace an id, the first process records it on the bus, and a worker
 * started with another workspace (a second machine with its own folder)
 * refuses with one line and exit 2, while one on the same workspace joins.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { keys } from '../../src/bus/keys.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { build, daemonEnv, magpie, type Proc, stop, tempWorkspace } from './daemon-helpers.js';

describe('a workspace that is not the bus’s', () => {
  let fake: FakeOpenAI;
  const procs: Proc[] = [];

  beforeAll(async () => {
    build();
    fake = await startFakeOpenAI({ responder: () => ({ content: 'ok' }) });
  }, 120_000);
  afterEach(async () => {
    await Promise.all(procs.splice(0).map((p) => stop(p)));
  });
  afterAll(async () => {
    await fake?.close();
  });

  it('makes a worker refuse with one line and exit 2; a worker on the same workspace joins', async () => {
    const first = tempWorkspace();
    const other = tempWorkspace();
    const firstId = readFileSync(path.join(first, '.magpie-id'), 'utf8').trim();
    const otherId = readFileSync(path.join(other, '.magpie-id'), 'utf8').trim();
    expect(firstId).toMatch(/^[0-9a-f-]{36}$/);
    expect(otherId).not.toBe(firstId);
    const env = daemonEnv({ REDIS_URL: inject('redisUrl'), OPENAI_BASE_URL: fake.baseURL });

    const gateway = magpie(['gateway'], { ...env, MAGPIE_WORKSPACE: first });
    procs.push(gateway);
    await gateway.waitFor(/magpie is running/, 20_000);
    const redis = new Redis(inject('redisUrl'));
    try {
      expect(await redis.get(keys.workspace(env.MAGPIE_QUEUE_PREFIX as string))).toBe(firstId);
    } finally {
      redis.disconnect();
    }

    const refused = magpie(['worker'], { ...env, MAGPIE_WORKSPACE: other });
    procs.push(refused);
    expect(await refused.exited).toBe(2);
    const plain = refused
      .stderr()
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('{'));
    expect(plain).toHaveLength(1);
    expect(plain[0]).toMatch(
      new RegExp(
        `^magpie: the workspace ${other} \\(id ${otherId}\\) is not the one the bus at .* serves \\(id ${firstId}\\): `,
      ),
    );
    expect(plain[0]).toContain('set MAGPIE_WORKSPACE to that workspace');
    expect(refused.stderr()).not.toContain('magpie is running');

    // The same workspace (what a second machine mounts from the shared volume) joins.
    const joined = magpie(['worker'], { ...env, MAGPIE_WORKSPACE: first });
    procs.push(joined);
    await joined.waitFor(/magpie is running/, 20_000);
  });
});
