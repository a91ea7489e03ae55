/** AgentLoop: the tool loop, errors fed back, the cap, concurrency, cancellation, message tool, metrics. */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CANCELLED_TOOL_TEXT } from '../../../src/agent/tool-batch.js';
import { CancelledError, ProviderError } from '../../../src/errors/index.js';
import type { ChatMessage } from '../../../src/providers/types.js';
import { createMessageTool } from '../../../src/tools/message.js';
import { fail, ok, type Tool } from '../../../src/tools/types.js';
import {
  assertPairsWhole,
  captureLogger,
  closeHarness,
  constantTool,
  type Harness,
  harness,
  inbound,
  MemoryState,
  ScriptedProvider,
  toolCallsResponse,
} from './loop-fixtures.js';

const echo: Tool = {
  name: 'echo',
  description: 'echoes text',
  parameters: z.object({ text: z.string() }),
  async execute(args) {
    return ok(`echo: ${(args as { text: string }).text}`);
  },
};

const broken = constantTool('broken', 'always fails', fail('the disk is on fire'));

let h: Harness | undefined;
afterEach(async () => {
  h = await closeHarness(h);
});

const toolMessages = (req: { messages: ChatMessage[] }) =>
  req.messages.filter((m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool');

/** A model that calls the message tool once with `args` (JSON), then ends with `finalText`. */
const messageToolProvider = (args: string, finalText: string) =>
  new ScriptedProvider([toolCallsResponse(['m', 'message', args]), { content: finalText }]);

describe('AgentLoop', () => {
  it('runs assistant → tool call → tool output → assistant and stores each message as it happens', async () => {
    const provider = new ScriptedProvider([
      { toolCalls: [{ id: 'c1', name: 'echo', arguments: '{"text":"hi"}' }] },
      { content: 'The tool said hi.' },
    ]);
    h = await harness(provider, [echo]);
    const result = await h.agent.processDirect('say hi', 'cli:default');
    expect(result.reply).toBe('The tool said hi.');
    expect(result.metrics.outcome).toBe('ok');
    expect(result.metrics.llmCalls).toBe(2);
    expect(result.metrics.toolCalls.map((t) => t.name)).toEqual(['echo']);
    expect(toolMessages(provider.requests[1]!)[0]).toMatchObject({ toolCallId: 'c1', content: 'echo: hi' });
    const history = await h.sessions.getHistory('cli:default');
    expect(history.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(assertPairsWhole(history)).toBe(true);
  });

  it('sends a failing tool, an unknown tool and malformed JSON back to the model, and still answers', async () => {
    const provider = new ScriptedProvider([
      toolCallsResponse(
        ['a', 'broken', '{}'],
        ['b', 'nosuch', '{}'],
        ['c', 'echo', '{"text": "unterminated'],
      ),
      { content: 'Sorry, those failed.' },
    ]);
    h = await harness(provider, [echo, broken]);
    const result = await h.agent.processDirect('try things', 'cli:t');
    expect(result.reply).toBe('Sorry, those failed.');
    const results = toolMessages(provider.requests[1]!);
    expect(results.map((r) => r.toolCallId)).toEqual(['a', 'b', 'c']);
    expect(results[0]!.content).toContain('the disk is on fire');
    expect(results[1]!.content).toMatch(/unknown tool nosuch/);
    expect(results[2]!.content).toMatch(/not valid JSON/);
    expect(result.metrics.toolCalls.map((t) => t.ok)).toEqual([false, false, false]);
  });

  it('stops at the iteration cap with a clear message', async () => {
    const provider = new ScriptedProvider([], {
      toolCalls: [{ id: 'x', name: 'echo', arguments: '{"text":"again"}' }],
    });
    h = await harness(provider, [echo], { maxIterations: 3 });
    const result = await h.agent.processDirect('loop forever', 'cli:cap');
    expect(provider.requests).toHaveLength(3);
    expect(result.metrics.outcome).toBe('max_iterations');
    expect(result.reply).toMatch(/^I stopped after 3 steps without finishing/);
    expect(assertPairsWhole(await h.sessions.getHistory('cli:cap'))).toBe(true);
  });

  it('runs the tool calls of one response concurrently and appends results in call order', async () => {
    let releaseFirst: () => void = () => {};
    const firstMayFinish = new Promise<void>((r) => {
      releaseFirst = r;
    });
    const slow: Tool = {
      name: 'slow',
      description: 'waits for fast',
      parameters: z.object({}),
      async execute() {
        await firstMayFinish;
        return ok('slow done');
      },
    };
    const fast: Tool = {
      name: 'fast',
      description: 'lets slow finish',
      parameters: z.object({}),
      async execute() {
        releaseFirst();
        return ok('fast done');
      },
    };
    const provider = new ScriptedProvider([
      toolCallsResponse(['1', 'slow', '{}'], ['2', 'fast', '{}']),
      { content: 'both done' },
    ]);
    h = await harness(provider, [slow, fast]);
    const result = await h.agent.processDirect('go', 'cli:par');
    expect(result.reply).toBe('both done');
    expect(toolMessages(provider.requests[1]!).map((m) => m.content)).toEqual(['slow done', 'fast done']);
  });

  it('an empty final text is a transient PROVIDER_EMPTY_RESPONSE error, never a made-up reply', async () => {
    h = await harness(new ScriptedProvider([{ content: '  \n' }]));
    const err = await h.agent.processDirect('hm', 'cli:empty').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ code: 'PROVIDER_EMPTY_RESPONSE', transient: true, exitCode: 1 });
    const stored = await h.sessions.getContextHistory('cli:empty');
    expect(stored.filter((m) => m.role === 'assistant')).toEqual([]);
  });

  it('an empty final text after the message tool answered the chat is a silent turn', async () => {
    const provider = messageToolProvider('{"content":"Here you go"}', '');
    h = await harness(provider, [createMessageTool()]);
    const result = await h.agent.processDirect('send it', 'cli:silent');
    expect(result.reply).toBeUndefined();
    expect(result.metrics.outcome).toBe('ok');
    expect(provider.requests.map((r) => r.allowEmpty)).toEqual([false, true]);
    const stored = await h.sessions.getContextHistory('cli:silent');
    expect(stored.at(-1)).toMatchObject({ role: 'tool', toolCallId: 'm' });
  });

  it('on cancellation answers every outstanding tool call with "operation cancelled by user"', async () => {
    const controller = new AbortController();
    let started = 0;
    const hang: Tool = {
      name: 'hang',
      description: 'never finishes on its own',
      parameters: z.object({}),
      async execute() {
        started += 1;
        if (started === 2) controller.abort();
        return new Promise(() => {});
      },
    };
    const provider = new ScriptedProvider([toolCallsResponse(['h1', 'hang', '{}'], ['h2', 'hang', '{}'])]);
    h = await harness(provider, [hang]);
    const result = await h.agent.processDirect('hang twice', 'cli:stop', { signal: controller.signal });
    expect(result.metrics.outcome).toBe('cancelled');
    expect(result.reply).toBe('Stopped.');
    expect(provider.requests).toHaveLength(1);
    const history = await h.sessions.getHistory('cli:stop');
    const tools = history.filter((m) => m.role === 'tool');
    expect(tools.map((m) => [m.toolCallId, m.content])).toEqual([
      ['h1', CANCELLED_TOOL_TEXT],
      ['h2', CANCELLED_TOOL_TEXT],
    ]);
    expect(assertPairsWhole(history)).toBe(true);
  });

  it('cancels a running model call', async () => {
    const controller = new AbortController();
    const provider = new ScriptedProvider([
      (req) =>
        new Promise((_resolve, reject) => {
          req.signal?.addEventListener('abort', () => reject(new CancelledError()));
          controller.abort();
        }),
    ]);
    h = await harness(provider);
    const result = await h.agent.processDirect('slow', 'cli:slow', { signal: controller.signal });
    expect(result.metrics.outcome).toBe('cancelled');
    expect(result.reply).toBe('Stopped.');
  });

  it('does not send the final text again when the message tool answered the origin chat', async () => {
    const provider = messageToolProvider('{"content":"Here you go"}', 'Sent it.');
    h = await harness(provider, [createMessageTool()]);
    const result = await h.agent.processMessage(inbound({ content: 'tell me', chatId: '7' }));
    expect(result.reply).toBeUndefined();
    expect(h.sink.sent).toHaveLength(1);
    expect(h.sink.sent[0]).toMatchObject({
      channel: 'telegram',
      chatId: '7',
      content: 'Here you go',
      kind: 'message',
    });
    expect(h.sink.sent[0]!.id).toMatch(/^m-/);
  });

  it('still replies when the message tool sent to another chat', async () => {
    const provider = messageToolProvider('{"content":"psst","chat_id":"99"}', 'Told them.');
    h = await harness(provider, [createMessageTool()]);
    const result = await h.agent.processMessage(inbound({ content: 'tell 99', chatId: '7' }));
    expect(result.reply).toBe('Told them.');
    expect(h.sink.sent[0]).toMatchObject({ chatId: '99' });
  });

  it('joins pending messages to the running turn between iterations', async () => {
    const provider = new ScriptedProvider([
      { toolCalls: [{ id: 'e', name: 'echo', arguments: '{"text":"x"}' }] },
      { content: 'Got both.' },
    ]);
    h = await harness(provider, [echo]);
    let drained = false;
    const result = await h.agent.processMessage(inbound({ content: 'first' }), {
      drainPending: async () => {
        if (drained) return [];
        drained = true;
        return [inbound({ content: 'second, meanwhile' })];
      },
    });
    expect(result.reply).toBe('Got both.');
    const last = provider.requests[1]!.messages.at(-1)!;
    expect(last).toMatchObject({ role: 'user', content: 'second, meanwhile' });
    const history = await h.sessions.getHistory('telegram:42');
    expect(history.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user', 'assistant']);
  });

  it('stops without writing once a later attempt of the turn has taken it over', async () => {
    const provider = new ScriptedProvider([{ content: 'an answer nobody should store' }]);
    h = await harness(provider);
    const asked: boolean[] = [];
    const outcome = h.agent.processMessage(inbound({ content: 'hello' }), {
      // Still this attempt's while the user's message is stored; taken over before the answer is.
      answering: async (write) => {
        const still = asked.length === 0;
        asked.push(still);
        if (still) await write();
        return still;
      },
    });
    await expect(outcome).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(asked).toEqual([true, false]);
    const history = await h.sessions.getHistory('telegram:42');
    expect(history.map((m) => m.role)).toEqual(['user']);
  });

  it('writes nothing at all when taken over before it began', async () => {
    h = await harness(new ScriptedProvider([{ content: 'never stored' }]));
    const outcome = h.agent.processMessage(inbound({ content: 'hello' }), {
      answering: async () => false,
    });
    await expect(outcome).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(await h.sessions.getHistory('telegram:42')).toEqual([]);
  });

  it('makes each session write inside the guard, so no later attempt claims between check and write', async () => {
    h = await harness(new ScriptedProvider([{ content: 'the answer' }]));
    const { sessions } = h;
    // What the session held when each guarded section ended: its write is done by then.
    const storedWhenLeft: string[][] = [];
    await h.agent.processMessage(inbound({ content: 'hello' }), {
      answering: async (write) => {
        await write();
        storedWhenLeft.push((await sessions.getHistory('telegram:42')).map((m) => m.role));
        return true;
      },
    });
    expect(storedWhenLeft).toEqual([['user'], ['user', 'assistant']]);
  });

  it('makes several messages of one batch consecutive user messages of one turn', async () => {
    const provider = new ScriptedProvider([{ content: 'ok both' }]);
    h = await harness(provider);
    await h.agent.processMessage([inbound({ content: 'one' }), inbound({ content: 'two' })]);
    expect(provider.requests).toHaveLength(1);
    expect(provider.requests[0]!.messages.slice(1)).toEqual([
      { role: 'user', content: 'one' },
      { role: 'user', content: 'two' },
    ]);
  });

  it('records the last external channel, not the CLI', async () => {
    const state = new MemoryState();
    h = await harness(new ScriptedProvider([{ content: 'a' }, { content: 'b' }]), [], { state });
    await h.agent.processDirect('hi', 'cli:default');
    expect(state.last).toBeUndefined();
    await h.agent.processMessage(
      inbound({ content: 'hi', channel: 'discord', chatId: 'c9', threadId: 't1' }),
    );
    expect(state.last).toEqual({ channel: 'discord', chatId: 'c9', threadId: 't1' });
  });

  it('heartbeat turns see no history and use the heartbeat session, aimed at the last chat', async () => {
    const state = new MemoryState();
    await state.setLastChannel('telegram', '5');
    const provider = new ScriptedProvider([{ content: 'HEARTBEAT_OK' }, { content: 'HEARTBEAT_OK' }]);
    h = await harness(provider, [], { state });
    await h.agent.processHeartbeat('check tasks');
    const result = await h.agent.processHeartbeat('check tasks again');
    expect(result.sessionKey).toBe('heartbeat');
    expect(result.target).toMatchObject({ channel: 'telegram', chatId: '5' });
    expect(provider.requests[1]!.messages.filter((m) => m.role === 'user')).toHaveLength(1);
    expect(await h.sessions.getHistory('heartbeat')).toHaveLength(4);
  });

  it('turns a system message into a turn of the origin session, framed, replying to the origin chat', async () => {
    const provider = new ScriptedProvider([{ content: 'Your research is done: 42.' }]);
    h = await harness(provider);
    const result = await h.agent.processMessage(
      inbound({
        channel: 'system',
        chatId: 'spawn-1',
        content: 'the answer is 42',
        metadata: { origin: { channel: 'telegram', chatId: '7' } },
      }),
    );
    expect(result.sessionKey).toBe('telegram:7');
    expect(result.target).toEqual({ channel: 'telegram', chatId: '7' });
    expect(result.reply).toBe('Your research is done: 42.');
    const user = provider.requests[0]!.messages.find((m) => m.role === 'user')!;
    expect(user.content).toMatch(/^\[background task result\] the answer is 42/);
  });

  it('skips a system message without an origin', async () => {
    const provider = new ScriptedProvider([]);
    h = await harness(provider);
    const result = await h.agent.processMessage(
      inbound({ channel: 'system', chatId: 'x', content: 'orphan' }),
    );
    expect(result.metrics.outcome).toBe('skipped');
    expect(result.reply).toBeUndefined();
    expect(provider.requests).toHaveLength(0);
  });

  it('rethrows provider errors after logging the turn as an error', async () => {
    const { logger, lines } = captureLogger();
    const provider = new ScriptedProvider([
      new ProviderError('PROVIDER_AUTH', 'the API key was refused (401)', { status: 401 }),
    ]);
    h = await harness(provider, [], { logger });
    await expect(h.agent.processDirect('hi', 'cli:auth')).rejects.toMatchObject({ code: 'PROVIDER_AUTH' });
    expect(lines.filter((l) => l['turn'])).toHaveLength(1);
    expect(lines.find((l) => l['turn'])).toMatchObject({ session: 'cli:auth', turn: { outcome: 'error' } });
  });

  it('a redone turn (the job retried after a transient error) does not store or send its messages twice', async () => {
    const provider = new ScriptedProvider([
      new ProviderError('PROVIDER_SERVER', 'the model endpoint failed (500)', { transient: true }),
      { content: 'second time lucky' },
    ]);
    h = await harness(provider);
    const batch = [inbound({ id: 'tg:42:1', content: 'hello' })];
    await expect(h.agent.processMessage(batch)).rejects.toMatchObject({ code: 'PROVIDER_SERVER' });
    const result = await h.agent.processMessage(batch);
    expect(result.reply).toBe('second time lucky');
    const users = provider.requests[1]!.messages.filter((m) => m.role === 'user');
    expect(users).toHaveLength(1);
    const history = await h.sessions.getHistory('telegram:42');
    expect(history.map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('a turn redone after its answer was stored (its worker died before queuing the reply) sends that answer again, without a model call', async () => {
    const provider = new ScriptedProvider([{ content: 'the answer' }, { content: 'nothing new to say' }]);
    h = await harness(provider);
    const batch = [inbound({ id: 'tg:42:7', content: 'question' })];
    expect((await h.agent.processMessage(batch)).reply).toBe('the answer');
    const redone = await h.agent.processMessage(batch);
    expect(redone.reply).toBe('the answer');
    expect(provider.requests).toHaveLength(1);
    const history = await h.sessions.getHistory('telegram:42');
    expect(history.map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('a turn redone with a new message keeps the stored answer and names its sends by the new message', async () => {
    const provider = new ScriptedProvider([
      toolCallsResponse(['m1', 'message', '{"content":"first note","chat_id":"99"}']),
      { content: 'answer one' },
      toolCallsResponse(['m2', 'message', '{"content":"second note","chat_id":"99"}']),
      { content: 'answer two' },
    ]);
    h = await harness(provider, [createMessageTool()]);
    const first = inbound({ id: 'tg:42:10', content: 'first question' });
    const second = inbound({ id: 'tg:42:11', content: 'second question' });
    expect((await h.agent.processMessage([first])).reply).toBe('answer one');
    // Redone (its reply never queued) with a message that arrived since.
    const redone = await h.agent.processMessage([first, second]);
    expect(redone).toMatchObject({ reply: 'answer two', answersFrom: 'tg:42:11' });
    expect(redone.stored).toEqual([{ ids: ['tg:42:10'], content: 'answer one' }]);
    expect(provider.requests).toHaveLength(4);
    const [earlier, later] = h.sink.sent.map((m) => m.id);
    expect(earlier).toMatch(/^m-/);
    expect(later).toMatch(/^m-/);
    expect(later).not.toBe(earlier); // the earlier attempt's send would drop it as a repeat
  });

  it('logs one info line per turn with its figures', async () => {
    const { logger, lines } = captureLogger();
    const provider = new ScriptedProvider([
      {
        toolCalls: [{ id: 'c', name: 'echo', arguments: '{"text":"a"}' }],
        usage: { promptTokens: 100, completionTokens: 10, totalTokens: 110 },
      },
      { content: 'done', usage: { promptTokens: 120, completionTokens: 5, totalTokens: 125 } },
    ]);
    h = await harness(provider, [echo], { logger });
    const result = await h.agent.processDirect('hi', 'cli:m');
    const turnLines = lines.filter((l) => l['turn']);
    expect(turnLines).toHaveLength(1);
    expect(turnLines[0]).toMatchObject({
      level: 30,
      session: 'cli:m',
      turn: { llmCalls: 2, promptTokens: 220, completionTokens: 15, outcome: 'ok' },
    });
    expect(result.metrics).toMatchObject({ llmCalls: 2, promptTokens: 220, completionTokens: 15 });
    expect(result.metrics.toolCalls).toHaveLength(1);
    expect(result.metrics.wallMs).toBeGreaterThanOrEqual(0);
  });
});
