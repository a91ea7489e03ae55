/**
 * `/forget` as a chat command: the turn answers it without a model call,
 * removing the fact from MEMORY.md (undoable through the history); /help
 * lists it; a loop without a history says it cannot change memory.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { forget } from '../../../../src/memory/history/forget.js';
import { MemoryHistory } from '../../../../src/memory/history/history.js';
import { type Harness, harness, ScriptedProvider } from '../../agent/loop-fixtures.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

describe('/forget in a chat', () => {
  it('removes the fact without a model call; undo brings it back', async () => {
    const provider = new ScriptedProvider([]);
    let history: MemoryHistory | undefined;
    h = await harness(provider, [], {
      forget: async (argument) => (await forget(history!, argument)).reply,
    });
    history = new MemoryHistory({ workspace: h.dir });
    await mkdir(path.join(h.dir, 'memory'), { recursive: true });
    await writeFile(path.join(h.dir, 'memory', 'MEMORY.md'), '- Ana likes tea\n- The boiler code is 4411\n');

    const { reply } = await h.agent.processDirect('/forget BOILER code', 'cli:test');

    expect(provider.requests).toHaveLength(0);
    expect(reply).toContain('Forgot 1 item from memory (matching "boiler code").');
    expect(reply).toContain('Before:\n- Ana likes tea\n- The boiler code is 4411\n\nAfter:\n- Ana likes tea');
    expect(await readFile(path.join(h.dir, 'memory', 'MEMORY.md'), 'utf8')).toBe('- Ana likes tea\n');
    const [entry] = await history.log();
    expect(entry?.who).toBe('/forget');
    await history.undo(entry!.rev);
    expect(await readFile(path.join(h.dir, 'memory', 'MEMORY.md'), 'utf8')).toBe(
      '- Ana likes tea\n- The boiler code is 4411\n',
    );
  });

  it('is in /help, and says it cannot change memory where there is no history', async () => {
    h = await harness(new ScriptedProvider([]));
    expect((await h.agent.processDirect('/help', 'cli:test')).reply).toContain(
      '/forget — remove from long-term memory',
    );
    expect((await h.agent.processDirect('/forget tea', 'cli:test')).reply).toBe(
      'Memory cannot be changed from this chat (no memory history here).',
    );
  });
});
