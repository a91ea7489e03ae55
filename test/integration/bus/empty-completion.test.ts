/**
 * An empty completion in the daemon: the real agent (buildAgent) over the fake
 * OpenAI server, run by the turn worker on real Redis. An empty answer is a
 * transient failure: the job is retried, and only after the last attempt does
 * the user get the usual apology; never an invented reply.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { buildAgent } from '../../../src/app/build-agent.js';
import { silentLogger } from '../../../src/log/index.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../fakes/openai-server.js';
import { inbound, startHarness, testConfig, waitFor } from './helpers.js';

describe('an empty completion in the worker', () => {
  let harness: Awaited<ReturnType<typeof startHarness>> | undefined;
  let fake: FakeOpenAI | undefined;
  let workspace: string | undefined;
  afterEach(async () => {
    await harness?.close();
    await fake?.close();
    if (workspace) await rm(workspace, { recursive: true, force: true });
    harness = undefined;
    fake = undefined;
    workspace = undefined;
  });

  async function start(replies: Parameters<FakeOpenAI['enqueue']>) {
    fake = await startFakeOpenAI();
    fake.enqueue(...replies);
    workspace = await mkdtemp(path.join(os.tmpdir(), 'magpie-empty-'));
    const config = testConfig(inject('redisUrl'), {
      MAGPIE_WORKSPACE: workspace,
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: fake.baseURL,
      MAGPIE_LLM_MAX_RETRIES: '0',
    });
    const { agent } = await buildAgent({
      config,
      logger: silentLogger(),
      outbound: { publish: async () => {} },
    });
    harness = await startHarness({ agent, config });
    return harness;
  }

  it('is retried as a transient failure, and a later attempt that answers is the one reply', async () => {
    const h = await start([{ content: '' }, { content: 'Here is my answer.' }]);
    await h.bus.publishInbound(inbound('e1', 'hello'));
    await waitFor(() => h.channel.sent.length === 1, 15_000, 'the reply after a retry');
    expect(h.channel.sent.map((m) => [m.kind, m.content])).toEqual([['reply', 'Here is my answer.']]);
    expect(fake!.requests).toHaveLength(2);
  });

  it('after the last attempt the user gets the usual apology naming the empty answer', async () => {
    const usageOnly = `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [] })}\n\ndata: [DONE]\n\n`;
    const h = await start([{ content: '' }, { raw: usageOnly }, { content: '   ' }]);
    await h.bus.publishInbound(inbound('e2', 'hello'));
    await waitFor(() => h.channel.sent.length === 1, 15_000, 'the apology');
    const [apology] = h.channel.sent;
    expect(apology!.kind).toBe('error');
    expect(apology!.content).toBe(
      'Sorry, my model sent an empty answer several times; please try again or rephrase.',
    );
    expect(fake!.requests).toHaveLength(3);
    expect(h.channel.sent.some((m) => /nothing more to add/.test(m.content))).toBe(false);
    expect(await h.bus.mailbox('test:e2').length()).toBe(0);
  });
});
