import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeEntities, htmlToText } from '../../../src/tools/html-text.js';
import { createCoreTools, ToolRegistry } from '../../../src/tools/index.js';
import { tempDirPerTest } from '../../fakes/workspace.js';
import { CORE_TOOL_NAMES, toolContext } from './helpers.js';

describe('createCoreTools', () => {
  let ws: string;
  tempDirPerTest((dir) => {
    ws = dir;
  });

  it('builds the eight core tools, each with an object JSON Schema', () => {
    const registry = new ToolRegistry(createCoreTools({ workspace: ws }));
    expect(registry.names()).toEqual(CORE_TOOL_NAMES);
    for (const def of registry.definitions()) {
      expect(def.parameters, def.name).toMatchObject({ type: 'object' });
      expect(def.parameters, def.name).not.toHaveProperty('$schema');
      expect(def.description.length, def.name).toBeGreaterThan(20);
    }
    const exec = registry.definitions().find((d) => d.name === 'exec');
    expect(exec?.parameters).toMatchObject({ required: ['command'] });
  });

  it('redacts the given secrets from every tool output', async () => {
    const secret = 'sk-proj-0123456789';
    const registry = new ToolRegistry(createCoreTools({ workspace: ws, secrets: [secret] }));
    const ctx = toolContext(ws);
    await registry.execute('write_file', JSON.stringify({ path: 'leak.txt', content: `key=${secret}` }), ctx);
    expect(await readFile(path.join(ws, 'leak.txt'), 'utf8')).toBe(`key=${secret}`);
    expect((await registry.execute('read_file', '{"path":"leak.txt"}', ctx)).forLLM).toBe('key=[redacted]');
    expect((await registry.execute('exec', '{"command":"cat leak.txt"}', ctx)).forLLM).toBe(
      'key=[redacted]\n[exit code 0]',
    );
  });

  it('passes the exec timeout through', async () => {
    const registry = new ToolRegistry(createCoreTools({ workspace: ws, execTimeoutMs: 300 }));
    const result = await registry.execute('exec', '{"command":"sleep 10"}', toolContext(ws));
    expect(result.forLLM).toMatch(/^Error: command timed out after 0\.3 s/);
  });

  it('passes the read cap through', async () => {
    const registry = new ToolRegistry(createCoreTools({ workspace: ws, maxReadChars: 5 }));
    await registry.execute('write_file', '{"path":"a.txt","content":"ab\\ncd\\nef\\n"}', toolContext(ws));
    const result = await registry.execute('read_file', '{"path":"a.txt"}', toolContext(ws));
    expect(result.forLLM).toBe(
      'ab\ncd\n[truncated at 5 characters: showed lines 1-2 of 3; call read_file with offset=3 to read further]',
    );
  });
});

describe('message tool', () => {
  let ws: string;
  tempDirPerTest((dir) => {
    ws = dir;
  });
  const registry = () => new ToolRegistry(createCoreTools({ workspace: ws }));

  it('sends to the current chat (thread included) by default', async () => {
    const ctx = toolContext(ws, { channel: 'telegram', chatId: '42', threadId: '7' });
    const result = await registry().execute('message', '{"content":"working on it"}', ctx);
    expect(result).toEqual({ forLLM: 'message sent' });
    expect(ctx.sent).toEqual([
      { channel: 'telegram', chatId: '42', threadId: '7', content: 'working on it', kind: 'message' },
    ]);
  });

  it('sends to another chat without the current thread', async () => {
    const ctx = toolContext(ws, { channel: 'telegram', chatId: '42', threadId: '7' });
    await registry().execute('message', '{"content":"hi","channel":"discord","chat_id":"99"}', ctx);
    expect(ctx.sent).toEqual([{ channel: 'discord', chatId: '99', content: 'hi', kind: 'message' }]);
  });

  it('needs chat_id for another channel, and reports a failed send', async () => {
    const ctx = toolContext(ws);
    const missing = await registry().execute('message', '{"content":"hi","channel":"discord"}', ctx);
    expect(missing).toEqual({
      forLLM: 'Error: chat_id is required to send to another channel (discord)',
      isError: true,
    });
    expect(ctx.sent).toEqual([]);
    const failing = toolContext(ws, {
      send: async () => {
        throw new Error('queue closed');
      },
    });
    expect(await registry().execute('message', '{"content":"hi"}', failing)).toEqual({
      forLLM: 'Error: message not sent: queue closed',
      isError: true,
    });
  });
});

describe('htmlToText', () => {
  it('decodes named and numeric entities', () => {
    expect(decodeEntities('&lt;b&gt; &#65;&#x42; &quot;q&quot; &apos;s&apos; &unknown;')).toBe(
      `<b> AB "q" 's' &unknown;`,
    );
  });

  it('drops comments, scripts and tags and keeps line structure', () => {
    expect(htmlToText('<div>a<!-- hidden --><br>b<script>x()</script></div><p>c</p>')).toBe('a\nb\nc');
  });
});
