/**
 * Hybrid memory search against a real SQLite index and the stand-in
 * embedding server (the real openai SDK talking to it over HTTP): a
 * paraphrased question finds the note keyword search misses; an endpoint
 * that fails (5xx, hangs, refuses) leaves keyword results and one line
 * saying so, without an error or a wait; vectors are cached by content
 * across restarts; a changed note is embedded again, once.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatForModel } from '../../../../src/memory/search/format.js';
import { OpenAIEmbedder } from '../../../../src/providers/openai/embeddings.js';
import { type FakeEmbeddingServer, startFakeEmbeddings } from '../../../fakes/embedding-server.js';
import { type TempSpace, tempSpace, writeNote } from './fixtures.js';

let space: TempSpace;
let server: FakeEmbeddingServer;
beforeEach(async () => {
  space = tempSpace();
  server = await startFakeEmbeddings();
});
afterEach(async () => {
  await server.close();
  space.cleanup();
});

const MODEL = 'stand-in-embed';
const embedder = (timeoutMs = 5_000) =>
  new OpenAIEmbedder({ apiKey: undefined, baseURL: server.baseURL, model: MODEL, timeoutMs });

/** Notes where the car fact is one passage among unrelated ones. */
function writeCarNotes(): void {
  writeNote(space.ws, '2024-03-09', [
    '- Bought a used Škoda estate from the garage in Braga.',
    '- Lunch with Ana at the market.',
  ]);
  writeNote(space.ws, '2024-04-02', [
    '- The plumber Rui fixed the kitchen tap.',
    '- Car boot sale was rained off.',
  ]);
  writeNote(space.ws, '2024-05-20', ['- Marta moved to Coimbra.']);
}

describe('hybrid memory search', () => {
  it('finds by meaning the note a paraphrased question shares no word with', async () => {
    writeCarNotes();
    const keywords = await space.index().search('what vehicle do I drive?');
    expect(keywords.hits.map((h) => h.snippet).join(' ')).not.toContain('Škoda');

    const index = space.index({ embedder: embedder(), embedAfterSearch: false });
    const figures = await index.embedPending();
    expect(figures).toMatchObject({ embedded: 5, pending: 0 });
    const hybrid = await index.search('what vehicle do I drive?');
    expect(hybrid.keywordOnly).toBeUndefined();
    expect(hybrid.hits[0]).toMatchObject({ path: 'memory/202403/20240309.md', line: 3, date: '2024-03-09' });
    expect(hybrid.hits[0]!.snippet).toContain('Škoda estate');
    expect(formatForModel('what vehicle do I drive?', hybrid, {})).not.toContain('keyword search only');
  });

  it('keeps keyword hits first-class: a literal word still finds its note', async () => {
    writeCarNotes();
    const index = space.index({ embedder: embedder(), embedAfterSearch: false });
    await index.embedPending();
    const { hits } = await index.search('plumber Rui');
    expect(hits[0]).toMatchObject({ path: 'memory/202404/20240402.md', line: 3 });
    expect(hits[0]!.snippet).toContain('\u0002Rui\u0003');
  });

  it.each([
    ['answers 503', { status: 503 }],
    ['hangs', { hang: true } as const],
  ])('searches by keywords with a one-line notice when the endpoint %s', async (_, failure) => {
    writeCarNotes();
    const index = space.index({ embedder: embedder(), queryTimeoutMs: 300, embedAfterSearch: false });
    await index.embedPending();
    server.fail(failure);
    const started = performance.now();
    const result = await index.search('Braga garage');
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(result.keywordOnly).toBe('the embedding endpoint is unreachable');
    expect(result.hits[0]).toMatchObject({ path: 'memory/202403/20240309.md', line: 3 });
    const text = formatForModel('Braga garage', result, {});
    expect(text).toContain('1. memory/202403/20240309.md:3');
    expect(text.split('\n').filter((l) => l.startsWith('(keyword search only'))).toEqual([
      '(keyword search only: the embedding endpoint is unreachable)',
    ]);
    // While it rests, the next search does not ask it at all.
    const asked = server.requests;
    await index.search('Braga');
    expect(server.requests).toBe(asked);
  });

  it('finds notes by keywords when the endpoint refuses connections, and embeds nothing', async () => {
    writeCarNotes();
    await server.close();
    const index = space.index({ embedder: embedder(), embedAfterSearch: false });
    const result = await index.search('Škoda');
    expect(result.keywordOnly).toBe('the embedding endpoint is unreachable');
    expect(result.hits.map((h) => h.path)).toEqual(['memory/202403/20240309.md']);
    expect(await index.embedPending()).toMatchObject({
      embedded: 0,
      pending: 5,
      stopped: 'the embedding endpoint is unreachable',
    });
  });

  it('finds a note not embedded yet by its words, beside embedded ones', async () => {
    writeCarNotes();
    const index = space.index({ embedder: embedder(), embedAfterSearch: false });
    await index.embedPending();
    writeNote(space.ws, '2024-06-01', ['- Zeppelin tickets for the Lisbon air show.']);
    const result = await index.search('zeppelin');
    expect(result.keywordOnly).toBeUndefined();
    expect(result.hits[0]).toMatchObject({ path: 'memory/202406/20240601.md' });
  });

  it('never embeds an unchanged passage twice, across a restart; a changed note once', async () => {
    writeCarNotes();
    const first = space.index({ embedder: embedder(), embedAfterSearch: false });
    await first.embedPending();
    expect(server.inputs).toHaveLength(5);

    // A new process: a new MemoryIndex over the same state folder.
    const second = space.index({ embedder: embedder(), embedAfterSearch: false });
    expect(await second.embedPending()).toMatchObject({ embedded: 0, calls: 0, pending: 0 });
    await second.search('what car do I drive?');
    expect(server.inputs).toEqual(expect.arrayContaining(['what car do I drive?']));
    expect(server.inputs).toHaveLength(6); // only the query

    // One passage of one note changes: only that passage is embedded, once.
    writeNote(space.ws, '2024-03-09', [
      '- Bought a used Škoda estate from the garage in Braga.',
      '- Lunch with Ana at the fish market.',
    ]);
    expect(await second.embedPending()).toMatchObject({ embedded: 1, calls: 1, pending: 0 });
    expect(server.inputs.at(-1)).toBe('- Lunch with Ana at the fish market.');
    expect(await second.embedPending()).toMatchObject({ embedded: 0, calls: 0 });
    expect(server.inputs).toHaveLength(7);
  });

  it('embeds in the background after a search, in batches', async () => {
    for (let day = 1; day <= 9; day++) writeNote(space.ws, `2024-01-0${day}`, [`- Entry number ${day}.`]);
    const index = space.index({ embedder: embedder() });
    const result = await index.search('entry');
    expect(result.hits.length).toBeGreaterThan(0);
    await index.settled();
    const models = server.models.filter((m) => m === MODEL);
    expect(models.length).toBe(server.requests);
    expect(new Set(server.inputs.slice(1))).toEqual(
      new Set(Array.from({ length: 9 }, (_, i) => `- Entry number ${i + 1}.`)),
    );
  });

  it('refuses an answer of the wrong shape without storing anything', async () => {
    writeFileSync(path.join(space.ws, 'memory', 'MEMORY.md'), '# Memory\n\n- Likes green tea.\n');
    server.fail({ shortAnswer: true });
    const index = space.index({ embedder: embedder(), embedAfterSearch: false });
    expect(await index.embedPending()).toEqual({
      embedded: 0,
      calls: 1,
      pending: 1,
      stopped: 'the embedding endpoint sent an unusable answer',
    });
  });
});

describe('hybrid memory search, edges', () => {
  it('keeps since/until for the passages found by meaning', async () => {
    writeCarNotes();
    const index = space.index({ embedder: embedder(), embedAfterSearch: false });
    await index.embedPending();
    const inApril = await index.search('what vehicle do I drive?', { since: 20240401, until: 20240430 });
    expect(inApril.hits.map((h) => h.date)).toEqual(expect.arrayContaining(['2024-04-02']));
    expect(inApril.hits.every((h) => h.date === '2024-04-02')).toBe(true);
    const inMarch = await index.search('what vehicle do I drive?', { since: 20240301, until: 20240331 });
    expect(inMarch.hits[0]).toMatchObject({ date: '2024-03-09', line: 3 });
  });

  it('never sends a configured secret to the endpoint: passages and queries are embedded redacted', async () => {
    writeNote(space.ws, '2024-02-02', ['- The router admin password is hunter2-Zq9!x, keep it safe.']);
    const index = space.index({ embedder: embedder(), embedAfterSearch: false, secrets: ['hunter2-Zq9!x'] });
    await index.embedPending();
    await index.search('router hunter2-Zq9!x');
    expect(server.inputs.length).toBe(2);
    for (const input of server.inputs) expect(input).not.toContain('hunter2');
    expect(server.inputs[0]).toContain('[redacted]');
  });
});
