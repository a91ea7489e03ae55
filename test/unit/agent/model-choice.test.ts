/**
 * `/model` and the per-turn model through the real AgentLoop and the
 * FallbackProvider over fake OpenAI servers: the list, switching one chat
 * only, the choice kept in the state folder across a restart, refusing an
 * unknown name; the turn figures and /status name the model that answered;
 * and the token budget follows the model actually used (a smaller fallback's
 * context-length error compacts to its window).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { estimateTokens, SUMMARY_SYSTEM_PROMPT } from '../../../src/agent/summarize.js';
import { parseCommand } from '../../../src/commands/parse.js';
import { silentLogger } from '../../../src/log/index.js';
import { MemoryCooldownStore } from '../../../src/providers/cooldown.js';
import { type FallbackModel, FallbackProvider } from '../../../src/providers/fallback.js';
import { OpenAIProvider } from '../../../src/providers/openai/provider.js';
import { FileModelChoiceStore } from '../../../src/sessions/model-choice-file.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../fakes/openai-server.js';
import { type Harness, harness, inbound } from './loop-fixtures.js';

let main: FakeOpenAI;
let local: FakeOpenAI;
let stateDir: string;
const harnesses: Harness[] = [];

beforeEach(async () => {
  [main, local] = await Promise.all([startFakeOpenAI(), startFakeOpenAI()]);
  main.setResponder(() => ({ content: 'from main' }));
  local.setResponder(() => ({ content: 'from local' }));
  stateDir = await mkdtemp(path.join(tmpdir(), 'magpie-state-'));
});
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.cleanup();
  await Promise.all([main.close(), local.close(), rm(stateDir, { recursive: true, force: true })]);
});

function entry(id: string, fake: FakeOpenAI): FallbackModel {
  return {
    id,
    model: id,
    baseURL: fake.baseURL,
    vision: false,
    provider: new OpenAIProvider({ apiKey: 'k', baseURL: fake.baseURL, model: id, maxRetries: 0 }),
  };
}

function provider(): FallbackProvider {
  return new FallbackProvider({
    models: [entry('gpt-4o', main), entry('llama3.1', local)],
    cooldowns: new MemoryCooldownStore(),
  });
}

async function agentWithFile(p = provider()): Promise<Harness> {
  const h = await harness(p, [], { modelChoices: new FileModelChoiceStore(stateDir, silentLogger()) });
  harnesses.push(h);
  return h;
}

async function say(h: Harness, content: string, chatId = 'A') {
  return h.agent.processMessage(inbound({ content, chatId }));
}

describe('/model', () => {
  it('is a command whose one-line argument names the model', () => {
    expect(parseCommand('/model')).toEqual({ name: 'model' });
    expect(parseCommand('/model llama3.1')).toEqual({ name: 'model', argument: 'llama3.1' });
    expect(parseCommand('/MODEL@magpie_bot  llama3.1 ')).toEqual({
      name: 'model',
      target: 'magpie_bot',
      argument: 'llama3.1',
    });
    expect(parseCommand('/model llama3.1\nand then more')).toBeUndefined();
  });

  it('lists the models, the default and this chat’s marked', async () => {
    const h = await agentWithFile();
    const reply = (await say(h, '/model')).reply!;
    expect(reply).toContain('1. gpt-4o (default, ← this chat)');
    expect(reply).toContain('2. llama3.1');
    expect(reply).toContain('/model NAME (or its number) switches this chat; /model default goes back.');
    expect(main.requests).toHaveLength(0);
  });

  it('switches this chat only, and the turn goes to that model first', async () => {
    const h = await agentWithFile();
    expect((await say(h, '/model llama3.1')).reply).toBe(
      'This chat now uses llama3.1 (the others step in if it fails).',
    );
    const a = await say(h, 'hello from A');
    expect(a.reply).toBe('from local');
    expect(a.metrics).toMatchObject({ model: 'llama3.1', fallbacks: 0, models: { 'llama3.1': 1 } });
    const b = await say(h, 'hello from B', 'B');
    expect(b.reply).toBe('from main');
    expect((await say(h, '/model')).reply).toContain('2. llama3.1 (← this chat)');
    expect((await say(h, '/model', 'B')).reply).toContain('1. gpt-4o (default, ← this chat)');
  });

  it('keeps the choice across a restart (a new loop over the same state folder)', async () => {
    const first = await agentWithFile();
    await say(first, '/model 2');
    const stored = JSON.parse(await readFile(path.join(stateDir, 'chat-models.json'), 'utf8'));
    expect(stored).toEqual({ 'telegram:A': 'llama3.1' });
    const restarted = await agentWithFile();
    expect((await say(restarted, 'still there?')).reply).toBe('from local');
    expect((await say(restarted, '/model default')).reply).toBe(
      'This chat is back on the default model, gpt-4o.',
    );
    expect((await say(restarted, 'and now?')).reply).toBe('from main');
    expect(JSON.parse(await readFile(path.join(stateDir, 'chat-models.json'), 'utf8'))).toEqual({});
  });

  it('refuses a name that is not configured and keeps the choice', async () => {
    const h = await agentWithFile();
    await say(h, '/model llama3.1');
    const reply = (await say(h, '/model gpt-5-turbo-secret')).reply!;
    expect(reply).toBe(
      'There is no model "gpt-5-turbo-secret" here. Choose one of: gpt-4o, llama3.1 (or default).',
    );
    expect((await say(h, '/model 9')).reply).toMatch(/^There is no model "9" here/);
    expect((await say(h, 'hi')).reply).toBe('from local');
  });

  it('treats a stored choice that is no longer configured as the default, and says so', async () => {
    await writeFile(
      path.join(stateDir, 'chat-models.json'),
      JSON.stringify({ 'telegram:A': 'mistral-large' }),
    );
    const h = await agentWithFile();
    expect((await say(h, 'hi')).reply).toBe('from main');
    expect((await say(h, '/model')).reply).toContain(
      '(This chat had picked mistral-large, which is no longer configured.)',
    );
  });

  it('falls back to the next model and /status names the chat’s model and the one that answered', async () => {
    const h = await agentWithFile();
    main.setResponder(() => ({ status: 503, error: { message: 'down' } }));
    const result = await say(h, 'hello');
    expect(result.reply).toBe('from local');
    expect(result.metrics).toMatchObject({ model: 'llama3.1', fallbacks: 1 });
    const status = (await say(h, '/status')).reply!;
    expect(status).toContain('Model: gpt-4o\n');
    expect(status).toContain('Last answer by: llama3.1');
    expect(status).toMatch(/Resting: gpt-4o for \d+s more \(failed once\)/);
    const history = await h.sessions.getHistory('telegram:A');
    expect(history.findLast((m) => m.role === 'assistant')).toMatchObject({ model: 'llama3.1' });
  });
});

describe('the token budget follows the model actually used', () => {
  it('compacts to a smaller fallback’s window after its context-length error, then fits it from the start', async () => {
    const windowOf = (body: { messages: unknown }) => Math.ceil(JSON.stringify(body.messages).length / 4);
    main.setResponder(() => ({ content: 'ok' }));
    let tooLong = 0;
    local.setResponder((req) => {
      if (req.body.messages[0].content === SUMMARY_SYSTEM_PROMPT)
        return { content: 'Earlier: three long notes.' };
      if (windowOf(req.body) > 32_768) {
        tooLong += 1;
        return {
          status: 400,
          error: {
            message: "This model's maximum context length is 32768 tokens",
            code: 'context_length_exceeded',
          },
        };
      }
      return { content: 'the small one answers' };
    });
    const p = new FallbackProvider({
      models: [entry('gpt-4o', main), entry('mistral', local)],
      cooldowns: new MemoryCooldownStore(),
    });
    const h = await harness(p, [], { summarizeAtTokens: 1_000_000 });
    harnesses.push(h);
    for (let i = 0; i < 3; i += 1) await h.agent.processDirect(`note ${i} ${'x'.repeat(48_000)}`, 'cli:long');
    expect(local.requests).toHaveLength(0);
    main.setResponder(() => ({ status: 503, error: { message: 'down' } }));
    const result = await h.agent.processDirect('and now?', 'cli:long');
    expect(result.reply).toBe('the small one answers');
    expect(result.metrics.model).toBe('mistral');
    expect(tooLong).toBe(1);
    const answered = local.requests
      .filter((r) => r.body.messages[0].content !== SUMMARY_SYSTEM_PROMPT)
      .at(-1)!;
    expect(estimateTokens(answered.body.messages)).toBeLessThanOrEqual(0.95 * 32_768);
    expect(local.requests.some((r) => r.body.messages[0].content === SUMMARY_SYSTEM_PROMPT)).toBe(true);
    // The first choice still rests: the next turn is budgeted for the fallback's window at once.
    await h.agent.processDirect(`more ${'y'.repeat(100_000)}`, 'cli:long');
    expect(tooLong).toBe(1);
  });
});
