/** AgentLoop input handling: slash commands and media/group messages turned into user content. */
import { afterEach, describe, expect, it } from 'vitest';
import { AgentLoop } from '../../../src/agent/loop.js';
import { toUserMessage, VOICE_NOT_TRANSCRIBED } from '../../../src/agent/user-content.js';
import { silentLogger } from '../../../src/log/index.js';
import type { AudioFile, ContentPart } from '../../../src/providers/types.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import {
  closeHarness,
  type Harness,
  harness,
  inbound,
  ScriptedProvider,
  simpleContext,
} from './loop-fixtures.js';

let h: Harness | undefined;
afterEach(async () => {
  h = await closeHarness(h);
});

describe('slash commands', () => {
  it('/new starts a fresh session without calling the model', async () => {
    const provider = new ScriptedProvider([{ content: 'hello' }]);
    h = await harness(provider);
    await h.agent.processDirect('hi', 'cli:n');
    expect(await h.sessions.getHistory('cli:n')).toHaveLength(2);
    const result = await h.agent.processDirect('/new', 'cli:n');
    expect(result.reply).toBe('Started a new conversation.');
    expect(result.metrics.outcome).toBe('command');
    expect(await h.sessions.getHistory('cli:n')).toHaveLength(0);
    expect(provider.requests).toHaveLength(1);
  });

  it('/status shows the model, the session length and the tokens used', async () => {
    const provider = new ScriptedProvider([
      { content: 'hello', usage: { promptTokens: 300, completionTokens: 20, totalTokens: 320 } },
    ]);
    h = await harness(provider);
    await h.agent.processDirect('hi', 'cli:s');
    const { reply } = await h.agent.processDirect('/status', 'cli:s');
    expect(reply).toContain('Model: scripted-model');
    expect(reply).toContain('2 message(s)');
    expect(reply).toContain('Tokens this conversation: 300 in (0 cached), 20 out');
  });

  it('/status sums the conversation from its log: cached tokens, every turn, a cost with prices', async () => {
    const usage = (prompt: number, cached: number, out: number) => ({
      promptTokens: prompt,
      cachedTokens: cached,
      completionTokens: out,
      totalTokens: prompt + out,
    });
    const provider = new ScriptedProvider([
      { content: 'one', usage: usage(2_000, 0, 100) },
      { content: 'two', usage: usage(3_000, 1_900, 50) },
    ]);
    h = await harness(provider);
    await h.agent.processDirect('first', 'cli:c');
    await h.agent.processDirect('second', 'cli:c');
    // Another loop on the same sessions (a second worker, or `magpie agent`) sees the same totals.
    const other = new AgentLoop({
      provider,
      tools: new ToolRegistry([]),
      sessions: h.sessions,
      context: simpleContext,
      logger: silentLogger(),
      outbound: h.sink,
      workspace: h.dir,
      prices: { input: 2, cachedInput: 0.5, output: 8 },
    });
    const { reply } = await other.processDirect('/status', 'cli:c');
    expect(reply).toContain('Tokens this conversation: 5,000 in (1,900 cached), 150 out, cost ≈ 0.00835');
    await h.agent.processDirect('/new', 'cli:c');
    expect((await h.agent.processDirect('/status', 'cli:c')).reply).toMatch(/Tokens this conversation: ~0 /);
  });

  it('/status estimates tokens when the endpoint reported none', async () => {
    h = await harness(new ScriptedProvider([{ content: 'hello there' }]));
    await h.agent.processDirect('hi', 'cli:e');
    const { reply } = await h.agent.processDirect('/status', 'cli:e');
    expect(reply).toMatch(/Tokens this conversation: ~\d+ \(estimated/);
  });

  it('/help lists the commands', async () => {
    h = await harness(new ScriptedProvider([]));
    const { reply } = await h.agent.processDirect('/help', 'cli:h');
    for (const c of ['/new', '/stop', '/status', '/help']) expect(reply).toContain(c);
  });

  it('runs a leading command, then the rest of the batch as a turn', async () => {
    const provider = new ScriptedProvider([{ content: 'fresh start' }]);
    h = await harness(provider);
    await h.sessions.append('telegram:42', { role: 'user', content: 'old' });
    const result = await h.agent.processMessage([
      inbound({ content: '/new' }),
      inbound({ content: 'hello' }),
    ]);
    expect(result.reply).toBe('Started a new conversation.\n\nfresh start');
    expect(provider.requests[0]!.messages.filter((m) => m.role === 'user')).toEqual([
      { role: 'user', content: 'hello' },
    ]);
  });
});

describe('user content', () => {
  const options = { provider: {}, logger: silentLogger() };

  it('prefixes group messages with the sender name', async () => {
    const { forModel } = await toUserMessage(
      inbound({ content: 'hi all', isGroup: true, senderName: 'Ana' }),
      options,
    );
    expect(forModel).toEqual({ role: 'user', content: 'Ana: hi all' });
  });

  it('turns images into image parts for the model and a note for the log', async () => {
    const msg = inbound({
      content: 'what is this?',
      media: [
        {
          kind: 'image',
          mimeType: 'image/png',
          name: 'cat.png',
          size: 2048,
          dataUrl: 'data:image/png;base64,AAAA',
        },
      ],
    });
    const { forModel, forLog } = await toUserMessage(msg, options);
    const parts = forModel.content as ContentPart[];
    expect(parts[0]).toEqual({ type: 'text', text: 'what is this?' });
    expect(parts[1]).toEqual({ type: 'image', url: 'data:image/png;base64,AAAA', mimeType: 'image/png' });
    expect(forLog.content).toBe('what is this?\n[image: cat.png, image/png, 2.0 KB]');
  });

  it('marks voice as not transcribed without a transcribe model, and transcribes with one', async () => {
    const voice = inbound({
      content: '',
      media: [
        { kind: 'audio', mimeType: 'audio/ogg', name: 'v.ogg', dataUrl: 'data:audio/ogg;base64,T2dnUw==' },
      ],
    });
    expect((await toUserMessage(voice, options)).forModel.content).toBe(VOICE_NOT_TRANSCRIBED);
    let got = '';
    const provider = {
      transcribe: async (audio: AudioFile) => {
        got = `${Buffer.from(audio.bytes).toString()}:${audio.fileName}`;
        return 'buy milk';
      },
    };
    const out = await toUserMessage(voice, { provider, transcribe: true, logger: silentLogger() });
    expect(out.forModel.content).toBe('[voice message] buy milk');
    expect(got).toBe('OggS:v.ogg');
  });

  it('describes other files by name, type and size', async () => {
    const msg = inbound({
      content: 'see attached',
      media: [{ kind: 'file', mimeType: 'application/pdf', name: 'report.pdf', size: 3 * 1024 * 1024 }],
    });
    expect((await toUserMessage(msg, options)).forModel.content).toBe(
      'see attached\n[file: report.pdf, application/pdf, 3.0 MB]',
    );
  });
});
