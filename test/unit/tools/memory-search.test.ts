/**
 * memory_search as the model calls it (through the ToolRegistry, arguments
 * as JSON text) over a real index in temporary folders: numbered results
 * with file:line, date and speaker; the plain "No results" answer; date
 * filters, their validation and the registry's own argument checks; and a
 * description that tells the model when to search.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMemorySearchTool } from '../../../src/tools/memory-search.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { appendSession, line, type TempSpace, tempSpace, writeNote } from '../memory/search/fixtures.js';
import { toolContext } from './helpers.js';

let space: TempSpace;
let registry: ToolRegistry;
beforeEach(() => {
  space = tempSpace();
  registry = new ToolRegistry([createMemorySearchTool(space.index())]);
  writeFileSync(
    path.join(space.ws, 'memory', 'MEMORY.md'),
    '# Memory\n\n## People\n\n- Sister: Marta, lives in Coimbra.\n',
  );
  writeNote(space.ws, '2024-05-12', ['- Marta moved to Coimbra today.']);
  appendSession(space.ws, 'telegram_42', [
    line('user', 'Marta sent photos of the Coimbra flat', '2024-06-01T17:05:00Z'),
    line('assistant', 'Lovely, the Coimbra flat looks bright.', '2024-06-01T17:05:04Z'),
  ]);
});
afterEach(() => space.cleanup());

const call = (args: object) => registry.execute('memory_search', JSON.stringify(args), toolContext(space.ws));

describe('memory_search', () => {
  it('answers with numbered results: file:line, the date, who wrote it, and the text', async () => {
    const result = await call({ query: 'Marta Coimbra' });
    expect(result.isError).toBeUndefined();
    const text = result.forLLM;
    expect(text).toMatch(/^4 results for "Marta Coimbra", best first:/);
    expect(text).toContain(
      'memory/202405/20240512.md:3 — daily note of 2024-05-12\n   - Marta moved to Coimbra today.',
    );
    expect(text).toContain('memory/MEMORY.md:5 — long-term memory, under "People"');
    expect(text).toContain(
      'sessions/telegram_42.jsonl:1 — conversation telegram:42, 2024-06-01 18:05, the user wrote',
    );
    expect(text).toContain(
      'sessions/telegram_42.jsonl:2 — conversation telegram:42, 2024-06-01 18:05, you wrote',
    );
    expect(text).not.toMatch(/[\u0002\u0003]/);
  });

  it('says plainly when nothing matches, and what it searched', async () => {
    const result = await call({ query: 'zeppelin' });
    expect(result).toEqual({
      forLLM:
        'No results for "zeppelin" in MEMORY.md, 1 daily note and 1 conversation log. ' +
        'Try other words (a name, a place, a distinctive term).\n' +
        '(keyword search only: no embedding model is set (MAGPIE_EMBEDDING_MODEL))',
    });
  });

  it('filters by date, and says the range when nothing is in it', async () => {
    const june = await call({ query: 'Coimbra', since: '2024-06-01', until: '2024-06-30' });
    expect(june.forLLM).toMatch(/^2 results for "Coimbra" between 2024-06-01 and 2024-06-30, best first:/);
    expect(june.forLLM).not.toContain('memory/');
    const none = await call({ query: 'Coimbra', since: '2025-01-01' });
    expect(none.forLLM).toBe(
      'No results for "Coimbra" in 1 daily note and 1 conversation log from 2025-01-01 on. ' +
        'Try other words (a name, a place, a distinctive term) or a wider date range. ' +
        'MEMORY.md has no date, so since/until leave it out.\n' +
        '(keyword search only: no embedding model is set (MAGPIE_EMBEDDING_MODEL))',
    );
  });

  it('refuses bad dates and bad arguments with a message the model can act on', async () => {
    expect(await call({ query: 'Marta', since: 'last spring' })).toEqual({
      forLLM: 'Error: since "last spring" is not a date; use YYYY-MM-DD, e.g. 2025-03-04',
      isError: true,
    });
    expect((await call({ query: 'Marta', since: '2024-06-01', until: '2024-01-01' })).forLLM).toMatch(
      /since \(2024-06-01\) is after until \(2024-01-01\)/,
    );
    expect((await call({ query: 'Marta', limit: 0 })).forLLM).toMatch(
      /invalid arguments for memory_search: limit/,
    );
    expect((await call({ query: '' })).isError).toBe(true);
    expect((await call({ query: '?!' })).forLLM).toMatch(/has no words to search for/);
  });

  it('never returns a configured secret, even one written into a note', async () => {
    const secret = 'sk-live-memory-0123456789';
    writeNote(space.ws, '2024-07-01', [`- Pasted the API key ${secret} into the router config.`]);
    const guarded = new ToolRegistry([createMemorySearchTool(space.index())], { secrets: [secret] });
    const result = await guarded.execute(
      'memory_search',
      JSON.stringify({ query: 'router API key' }),
      toolContext(space.ws),
    );
    expect(result.forLLM).toContain('memory/202407/20240701.md:3');
    expect(result.forLLM).toContain('[redacted]');
    expect(result.forLLM).not.toContain(secret);
  });

  it('shows a passage holding a secret redacted whole, never a snippet cut through the secret', async () => {
    const secret = `tok-${Array.from({ length: 60 }, (_, i) => `part${i}`).join('-')}`;
    const filler = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
    writeNote(space.ws, '2024-07-02', [`- ${filler} ${secret} zebracrossing ${filler}`]);
    // Without the secret known, the snippet window around the match starts inside the secret.
    const plain = await call({ query: 'zebracrossing' });
    expect(plain.forLLM).toMatch(/part\d+/);
    expect(plain.forLLM).not.toContain('tok-part0');
    const guarded = new ToolRegistry([createMemorySearchTool(space.index({ secrets: [secret] }))], {
      secrets: [secret],
    });
    const result = await guarded.execute(
      'memory_search',
      JSON.stringify({ query: 'zebracrossing' }),
      toolContext(space.ws),
    );
    expect(result.forLLM).toContain('memory/202407/20240702.md:3');
    expect(result.forLLM).not.toMatch(/part\d+/);
  });

  it('honours limit', async () => {
    const result = await call({ query: 'Marta Coimbra', limit: 1 });
    expect(result.forLLM).toMatch(/^1 result for/);
  });

  it('tells the model when to use it, in its first line (the one the prompt lists)', () => {
    const tool = createMemorySearchTool(space.index());
    const [first, ...rest] = tool.description.split('\n');
    expect(first).toMatch(/every daily note and every past conversation/);
    expect(first).toMatch(/past events, people, places, dates, numbers/);
    expect(rest.join(' ')).toMatch(/search before saying you do not know/);
  });
});
