/**
 * Fallbacks in the daemon: two turn workers on real Redis (each its own
 * connection, agent and cool-down store, as two processes would have) run the
 * real agent over a failing fake endpoint and a healthy fallback. The failing
 * endpoint gets one request per cool-down across many turns and both workers
 * (a probe when the cool-down runs out, and only one); it answers again once
 * it is back. `/model` set through one worker holds on the other and after a
 * restart. With everything down, the chat gets a short apology.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { buildAgent } from '../../../src/app/build-agent.js';
import { Bus } from '../../../src/bus/bus.js';
import { RedisCooldownStore } from '../../../src/bus/cooldown-store.js';
import { RedisModelChoiceStore } from '../../../src/bus/model-choice-store.js';
import { readTurns } from '../../../src/bus/turn-records.js';
import type { Config } from '../../../src/config/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { TurnWorker } from '../../../src/worker/turn-worker.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { inbound, startHarness, testConfig, waitFor } from '../bus/helpers.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function fakes(): Promise<{ main: FakeOpenAI; backup: FakeOpenAI }> {
  const [main, backup] = await Promise.all([startFakeOpenAI(), startFakeOpenAI()]);
  closers.push(
    () => main.close(),
    () => backup.close(),
  );
  backup.setResponder((req) => ({ content: `backup: ${lastUserText(req)}`, delayMs: 100 }));
  return { main, backup };
}

async function configFor(main: FakeOpenAI, backup: FakeOpenAI, cooldown = '30s'): Promise<Config> {
  const workspace = await mkdtemp(path.join(os.tmpdir(), 'magpie-fallback-'));
  closers.push(() => rm(workspace, { recursive: true, force: true }));
  return testConfig(inject('redisUrl'), {
    MAGPIE_WORKSPACE: workspace,
    OPENAI_API_KEY: 'test-key',
    OPENAI_BASE_URL: main.baseURL,
    MAGPIE_MODEL: 'main-model',
    MAGPIE_FALLBACK_MODELS: `backup-model@${backup.baseURL}`,
    MAGPIE_FALLBACK_COOLDOWN: cooldown,
    MAGPIE_LLM_MAX_RETRIES: '0',
    MAGPIE_HEARTBEAT_INTERVAL: '0',
  });
}

/** One worker process's worth: its own Redis connection, agent, cool-down store and turn worker. */
async function worker(config: Config): Promise<TurnWorker> {
  const logger = silentLogger();
  const bus = await Bus.connect({ config, logger, turnJobs: { backoffMs: 50 }, patient: true });
  const { agent } = await buildAgent({
    config,
    logger,
    outbound: { publish: (m) => bus.publishOutbound(m) },
    cooldowns: new RedisCooldownStore(bus.redis, bus.prefix),
    modelChoices: new RedisModelChoiceStore(bus.redis, bus.prefix),
    execSandbox: { kind: 'off', mode: 'off', reason: 'tests' },
  });
  const turns = new TurnWorker({ bus, agent, logger, concurrency: 2 });
  await turns.start();
  closers.push(async () => {
    await turns.close();
    await bus.close();
  });
  return turns;
}

/** The first worker with the delivery to a recording channel, plus a second worker. */
async function twoWorkers(config: Config) {
  const first = await worker(config);
  const second = await worker(config);
  // The harness brings the bus the test publishes on and the channel replies reach (its own worker idles).
  const { agent } = await buildAgent({
    config,
    logger: silentLogger(),
    outbound: { publish: async () => {} },
    execSandbox: { kind: 'off', mode: 'off', reason: 'tests' },
  });
  const h = await startHarness({ agent, config, concurrency: 1 });
  closers.push(() => h.close());
  await h.worker.close();
  return { h, ids: [first.id, second.id] };
}

describe('fallbacks across two workers', () => {
  it('costs the failing endpoint one request per cool-down, and uses it again once it answers', async () => {
    const { main, backup } = await fakes();
    let down = true;
    main.setResponder(() =>
      down ? { status: 503, error: { message: 'upstream down' } } : { content: 'main is back' },
    );
    const config = await configFor(main, backup, '3s');
    const { h, ids } = await twoWorkers(config);
    await h.bus.publishInbound(inbound('c0', 'first'));
    await waitFor(() => h.channel.sent.length === 1, 15_000, 'the first reply');
    expect(h.channel.sent[0]?.content).toBe('backup: first');
    expect(main.requests).toHaveLength(1);
    for (let i = 1; i <= 8; i++) await h.bus.publishInbound(inbound(`c${i}`, `turn ${i}`));
    await waitFor(() => h.channel.sent.length === 9, 20_000, 'eight more replies');
    expect(h.channel.sent.every((m) => m.content.startsWith('backup: '))).toBe(true);
    expect(main.requests).toHaveLength(1);
    const workers = new Set((await readTurns(h.bus.redis, h.bus.prefix, 20)).map((t) => t.worker));
    expect(ids.every((id) => workers.has(id))).toBe(true);
    const turns = await readTurns(h.bus.redis, h.bus.prefix, 20);
    expect(turns.every((t) => t.model === 'backup-model' && t.fallbacks === 1)).toBe(true);

    // The cool-down runs out: of many turns at once on both workers, one probes; still down, it rests again.
    await waitFor(
      async () =>
        (await new RedisCooldownStore(h.bus.redis, h.bus.prefix).list()).every((e) => e.leftMs === 0),
      10_000,
      'the cool-down to run out',
    );
    for (let i = 10; i < 16; i++) await h.bus.publishInbound(inbound(`c${i}`, `turn ${i}`));
    await waitFor(() => h.channel.sent.length === 15, 20_000, 'six more replies');
    expect(main.requests).toHaveLength(2);

    // Back up: after the (doubled) cool-down the probe answers, and it is used again.
    down = false;
    await waitFor(
      async () =>
        (await new RedisCooldownStore(h.bus.redis, h.bus.prefix).list()).every((e) => e.leftMs === 0),
      10_000,
      'the second cool-down to run out',
    );
    await h.bus.publishInbound(inbound('c20', 'hello again'));
    await waitFor(() => h.channel.sent.length === 16, 15_000, 'the reply of the recovered model');
    expect(h.channel.sent.at(-1)?.content).toBe('main is back');
    await h.bus.publishInbound(inbound('c21', 'and again'));
    await waitFor(() => h.channel.sent.length === 17, 15_000, 'the next reply');
    expect(h.channel.sent.at(-1)?.content).toBe('main is back');
    expect(await new RedisCooldownStore(h.bus.redis, h.bus.prefix).list()).toEqual([]);
  });

  it('keeps a chat’s /model on every worker and across a restart', async () => {
    const { main, backup } = await fakes();
    main.setResponder((req) => ({ content: `main: ${lastUserText(req)}` }));
    const config = await configFor(main, backup);
    const { h } = await twoWorkers(config);
    await h.bus.publishInbound(inbound('pick', '/model backup-model'));
    await waitFor(() => h.channel.sent.length === 1, 15_000, 'the /model reply');
    expect(h.channel.sent[0]?.content).toBe(
      'This chat now uses backup-model (the others step in if it fails).',
    );
    for (let i = 0; i < 4; i++) {
      await h.bus.publishInbound(inbound('pick', `message ${i}`));
      await h.bus.publishInbound(inbound(`other${i}`, `elsewhere ${i}`));
      await waitFor(() => h.channel.sent.length === 3 + 2 * i, 15_000, 'two replies');
    }
    const byChat = (chat: string) => h.channel.sent.filter((m) => m.chatId === chat).map((m) => m.content);
    expect(byChat('pick').slice(1)).toEqual([
      'backup: message 0',
      'backup: message 1',
      'backup: message 2',
      'backup: message 3',
    ]);
    expect(byChat('other2')).toEqual(['main: elsewhere 2']);
    // A restart: every worker closes, new ones start on the same Redis.
    // closers: the two fakes, the workspace, then the workers and the harness.
    for (const close of closers.splice(3).reverse()) await close();
    const { h: again } = await twoWorkers(config);
    await again.bus.publishInbound(inbound('pick', 'after the restart'));
    await waitFor(() => again.channel.sent.length === 1, 15_000, 'the reply after the restart');
    expect(again.channel.sent[0]?.content).toBe('backup: after the restart');
  });

  it('sends a short apology naming no endpoint when every model is down', async () => {
    const { main, backup } = await fakes();
    main.setResponder(() => ({ status: 503, error: { message: 'down' } }));
    backup.setResponder(() => ({ status: 429, error: { message: 'quota', code: 'insufficient_quota' } }));
    const config = await configFor(main, backup);
    const { h } = await twoWorkers(config);
    await h.bus.publishInbound(inbound('down', 'anyone there?'));
    await waitFor(() => h.channel.sent.length === 1, 20_000, 'the apology');
    const [apology] = h.channel.sent;
    expect(apology?.kind).toBe('error');
    expect(apology?.content).toBe(
      'Sorry, none of my models is answering right now (main-model: server error 503; backup-model: out of quota). Please try again in a few minutes.',
    );
    expect(apology?.content).not.toContain('127.0.0.1');
  });
});
