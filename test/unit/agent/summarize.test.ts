/** Summarisation: token estimate, tool pairs kept whole, batches, background summaries, context-length recovery. */
import { afterEach, describe, expect, it } from 'vitest';
import {
  chooseCut,
  estimateTokens,
  logIndexOf,
  SUMMARY_SYSTEM_PROMPT,
  summarizeSession,
} from '../../../src/agent/summarize.js';
import { ProviderError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { OpenAIProvider } from '../../../src/providers/openai/provider.js';
import type { ChatMessage, ChatRequest } from '../../../src/providers/types.js';
import type { SessionEntry } from '../../../src/sessions/types.js';
import { type FakeOpenAI, type RecordedRequest, startFakeOpenAI } from '../../fakes/openai-server.js';
import { assertPairsWhole, type Harness, harness, ScriptedProvider } from './loop-fixtures.js';

const isSummaryCall = (req: ChatRequest) => req.messages[0]?.content === SUMMARY_SYSTEM_PROMPT;

/** A session of `turns` exchanges, each user → assistant(tool call) → tool → assistant. */
function conversation(turns: number, size = 40): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = 0; i < turns; i += 1) {
    out.push({ role: 'user', content: `question ${i} ${'x'.repeat(size)}` });
    out.push({
      role: 'assistant',
      content: null,
      toolCalls: [{ id: `t${i}`, name: 'echo', arguments: '{}' }],
    });
    out.push({ role: 'tool', toolCallId: `t${i}`, name: 'echo', content: `result ${i} ${'y'.repeat(size)}` });
    out.push({ role: 'assistant', content: `answer ${i}` });
  }
  return out;
}

let h: Harness | undefined;
let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await h?.agent.idle();
  await h?.cleanup();
  await fake?.close();
  h = undefined;
  fake = undefined;
});

describe('estimateTokens and chooseCut', () => {
  it('counts about four characters a token plus framing, and images at a flat rate', () => {
    expect(estimateTokens([{ role: 'user', content: 'a'.repeat(400) }])).toBe(104);
    const image: ChatMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'see' },
        { type: 'image', url: `data:image/png;base64,${'A'.repeat(100_000)}` },
      ],
    };
    expect(estimateTokens([image])).toBeLessThan(1_000);
  });

  it('never starts the kept tail at a tool result', () => {
    const messages = conversation(3);
    for (let keep = 0; keep <= messages.length; keep += 1) {
      const cut = chooseCut(messages, keep);
      expect(messages[cut]?.role ?? 'end').not.toBe('tool');
      expect(assertPairsWhole(messages.slice(cut))).toBe(true);
    }
  });

  it('maps a context-history index back to the full log', () => {
    const log: SessionEntry[] = conversation(3).map((m, i) => ({ ...m, ts: `t${i}` }));
    const context = [...log.slice(4, 5), ...log.slice(7)];
    expect(logIndexOf(log, context, 0)).toBe(4);
    expect(logIndexOf(log, context, 1)).toBe(7);
    expect(logIndexOf(log, context, context.length)).toBe(log.length);
  });
});

describe('summarizeSession', () => {
  it('summarises older messages, keeps the last few and never splits a tool pair', async () => {
    const provider = new ScriptedProvider([], { content: 'they asked five questions' });
    h = await harness(provider);
    await h.sessions.append('cli:s', ...conversation(5));
    await h.sessions.setSummary('cli:s', 'earlier: hello', 0);
    const done = await summarizeSession({
      sessions: h.sessions,
      provider,
      key: 'cli:s',
      logger: silentLogger(),
      keepLastMessages: 3,
    });
    expect(done).toBe(true);
    const context = await h.sessions.getContextHistory('cli:s');
    expect(context.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
    expect(assertPairsWhole(context)).toBe(true);
    expect(await h.sessions.getSummary('cli:s')).toBe('they asked five questions');
    expect(await h.sessions.getHistory('cli:s')).toHaveLength(20);
    const prompt = provider.requests[0]!.messages[1]!.content as string;
    expect(prompt).toContain('earlier: hello');
    expect(prompt).toContain('question 0');
    expect(prompt).not.toContain('answer 4');
  });

  it('summarises a large history in batches, carrying the summary forward', async () => {
    let n = 0;
    const provider = new ScriptedProvider([], async () => ({ content: `summary ${++n}` }));
    h = await harness(provider);
    await h.sessions.append('cli:big', ...conversation(20, 400));
    await summarizeSession({
      sessions: h.sessions,
      provider,
      key: 'cli:big',
      logger: silentLogger(),
      keepLastMessages: 4,
      batchTokens: 1_000,
    });
    expect(provider.requests.length).toBeGreaterThan(2);
    expect(provider.requests[1]!.messages[1]!.content).toContain('Existing summary:\nsummary 1');
    expect(await h.sessions.getSummary('cli:big')).toBe(`summary ${provider.requests.length}`);
  });

  it('summarises in the background after a turn without blocking the reply; idle() waits for it', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const provider = new ScriptedProvider([], async (req) => {
      if (isSummaryCall(req)) {
        await gate;
        return { content: 'compact summary' };
      }
      return { content: 'reply' };
    });
    h = await harness(provider, [], { summarizeAtTokens: 200, keepLastMessages: 2 });
    await h.sessions.append('cli:bg', ...conversation(4));
    const result = await h.agent.processDirect('one more', 'cli:bg');
    expect(result.reply).toBe('reply');
    expect(await h.sessions.getSummary('cli:bg')).toBeUndefined();
    const next = await h.agent.processDirect('and another', 'cli:bg');
    expect(next.reply).toBe('reply');
    expect(provider.requests.filter(isSummaryCall)).toHaveLength(1);
    release();
    await h.agent.idle();
    expect(await h.sessions.getSummary('cli:bg')).toBe('compact summary');
    const context = await h.sessions.getContextHistory('cli:bg');
    expect(context.at(-1)).toMatchObject({ role: 'assistant', content: 'reply' });
    expect(context.length).toBeLessThan(10);
  });
});

describe('context length exceeded', () => {
  it('compacts and retries: exactly 2 main-model calls and a shorter history (real provider, fake server)', async () => {
    const isSummary = (req: RecordedRequest) => req.body.messages?.[0]?.content === SUMMARY_SYSTEM_PROMPT;
    let mainCalls = 0;
    fake = await startFakeOpenAI({
      responder: (req) => {
        if (isSummary(req)) return { content: 'summary of the early chat' };
        mainCalls += 1;
        return mainCalls === 1
          ? {
              status: 400,
              error: { message: 'maximum context length exceeded', code: 'context_length_exceeded' },
            }
          : { content: 'answer after compaction' };
      },
    });
    const provider = new OpenAIProvider({
      apiKey: 'k',
      baseURL: fake.baseURL,
      model: 'fake-model',
      maxRetries: 0,
    });
    h = await harness(provider, [], { keepLastMessages: 8 });
    await h.sessions.append('cli:ctx', ...conversation(10));
    const result = await h.agent.processDirect('and now?', 'cli:ctx');
    expect(result.reply).toBe('answer after compaction');
    const main = fake.requests.filter((r) => !isSummary(r));
    expect(main).toHaveLength(2);
    expect(main[1]!.body.messages.length).toBeLessThan(main[0]!.body.messages.length);
    expect(main[1]!.body.messages[0].content).toContain('summary of the early chat');
    expect(await h.sessions.getSummary('cli:ctx')).toBe('summary of the early chat');
    const context = await h.sessions.getContextHistory('cli:ctx');
    expect(context.length).toBeLessThan(41);
    expect(assertPairsWhole(context)).toBe(true);
  });

  it('gives up after two compactions and rethrows', async () => {
    const provider = new ScriptedProvider([], async (req) => {
      if (isSummaryCall(req)) return { content: 'shorter' };
      throw new ProviderError('CONTEXT_LENGTH_EXCEEDED', 'context length exceeded');
    });
    h = await harness(provider, [], { keepLastMessages: 8 });
    await h.sessions.append('cli:loop', ...conversation(10));
    await expect(h.agent.processDirect('again', 'cli:loop')).rejects.toMatchObject({
      code: 'CONTEXT_LENGTH_EXCEEDED',
    });
    expect(provider.requests.filter((r) => !isSummaryCall(r))).toHaveLength(3);
  });
});
