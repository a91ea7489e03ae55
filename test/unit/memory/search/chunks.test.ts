/**
 * What becomes a searchable chunk (note paragraphs and list items with their
 * heading and line, message text only), long texts cut at sensible places,
 * the query words sent to FTS5, days and times in a time zone, and the
 * check that a file opened for reading is still the one the scan saw.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  MAX_CHUNK_CHARS,
  noteChunks,
  sessionChunks,
  splitLong,
} from '../../../../src/memory/search/chunks.js';
import { LocalClock, parseDay } from '../../../../src/memory/search/dates.js';
import { queryTerms, toMatchExpressions } from '../../../../src/memory/search/query.js';
import { openSource, scanSources } from '../../../../src/memory/search/sources.js';

describe('noteChunks', () => {
  it('makes one chunk per list item or paragraph, with its first line and the heading above', () => {
    const note = [
      '# 2024-05-12', //                       1
      '', //                                   2
      '<!-- a template comment -->', //        3
      '- Lunch with Ana.', //                  4
      '- Called the plumber', //               5
      '  about the boiler leak.', //           6
      '', //                                   7
      '## Family', //                          8
      '', //                                   9
      'Marta moved to Coimbra.', //            10
      'Her flat is on Rua Direita.', //        11
      '1. first', //                           12
      '<!-- spans', //                         13
      'lines -->', //                          14
    ].join('\n');
    expect(noteChunks(note)).toEqual([
      { line: 4, body: '- Lunch with Ana.', heading: '' },
      { line: 5, body: '- Called the plumber\n  about the boiler leak.', heading: '' },
      { line: 10, body: 'Marta moved to Coimbra.\nHer flat is on Rua Direita.', heading: 'Family' },
      { line: 12, body: '1. first', heading: 'Family' },
    ]);
  });

  it('cuts a long paragraph into pieces of at most MAX_CHUNK_CHARS', () => {
    const long = Array.from({ length: 60 }, (_, i) => `sentence number ${i} is here.`).join(' ');
    const chunks = noteChunks(long);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.every((c) => c.body.length <= MAX_CHUNK_CHARS && c.line === 1)).toBe(true);
    expect(chunks.map((c) => c.body).join(' ')).toBe(long);
  });
});

describe('splitLong', () => {
  it('cuts at blank lines first, then line ends, then spaces, then anywhere', () => {
    const para = 'x'.repeat(700);
    expect(splitLong(`${para}\n\n${para}`)).toEqual([para, para]);
    expect(splitLong(`${para}\n${para}`)).toEqual([para, para]);
    expect(splitLong(`${para} ${para}`)).toEqual([para, para]);
    expect(splitLong('y'.repeat(2500)).map((p) => p.length)).toEqual([1200, 1200, 100]);
    expect(splitLong('   ')).toEqual([]);
  });
});

describe('sessionChunks', () => {
  const clock = new LocalClock('Europe/Lisbon');

  it('keeps user and assistant text with its line, role and local day; skips everything else', () => {
    const lines = [
      JSON.stringify({ role: 'user', content: 'hello there', ts: '2024-03-31T00:30:00Z' }),
      JSON.stringify({
        role: 'assistant',
        content: null,
        toolCalls: [{ id: 'a', name: 'exec', arguments: '{}' }],
      }),
      JSON.stringify({ role: 'tool', toolCallId: 'a', content: 'tool output' }),
      JSON.stringify({ role: 'system', content: 'system text' }),
      '{broken',
      JSON.stringify({
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image', url: 'data:x' },
          { type: 'text', text: 'at this' },
        ],
      }),
      JSON.stringify({ role: 'assistant', content: '   ' }),
    ].join('\n');
    expect(sessionChunks(lines, 10, clock)).toEqual([
      {
        line: 10,
        body: 'hello there',
        heading: '',
        role: 'user',
        day: 20240331,
        ts: Date.parse('2024-03-31T00:30:00Z'),
      },
      { line: 15, body: 'look\nat this', heading: '', role: 'user' },
    ]);
  });
});

describe('queryTerms and toMatchExpressions', () => {
  it('keeps the words that carry the question, quoted, joined with AND and with OR', () => {
    expect(queryTerms("What was the plumber's number?")).toEqual(['plumber', 'number']);
    expect(toMatchExpressions('When did Marta move to Coimbra?')).toEqual({
      all: '"marta" AND "move" AND "coimbra"',
      pairs: '("marta" AND "move") OR ("marta" AND "coimbra") OR ("move" AND "coimbra")',
      any: '"marta" OR "move" OR "coimbra"',
      terms: 3,
    });
    expect(toMatchExpressions('Marta Coimbra')?.pairs).toBeUndefined(); // two words together is "all"
    expect(toMatchExpressions('a1 b2 c3 d4 e5 f6 g7')?.pairs).toBeUndefined(); // too many words to pair
    expect(queryTerms('flat 3 in São João')).toEqual(['flat', '3', 'são', 'joão']);
  });

  it('keeps only stopwords when that is all there is, and nothing for no words', () => {
    expect(queryTerms('who is she')).toEqual(['who', 'is', 'she']);
    expect(toMatchExpressions('?!… --')).toBeUndefined();
  });

  it('cannot smuggle FTS5 syntax: operators become plain quoted words', () => {
    expect(toMatchExpressions('a NEAR(b c) OR body:x*')?.any).toBe('"near" OR "body"');
  });
});

describe('dates', () => {
  it('gives the local day and time across daylight saving changes', () => {
    const lisbon = new LocalClock('Europe/Lisbon');
    expect(lisbon.local(Date.parse('2024-03-31T00:59:00Z'))).toEqual({ day: 20240331, time: '00:59' });
    expect(lisbon.local(Date.parse('2024-03-31T01:00:00Z'))).toEqual({ day: 20240331, time: '02:00' });
    expect(lisbon.local(Date.parse('2024-10-26T23:30:00Z'))).toEqual({ day: 20241027, time: '00:30' });
    expect(new LocalClock('Asia/Kolkata').local(Date.parse('2024-01-01T18:45:00Z'))).toEqual({
      day: 20240102,
      time: '00:15',
    });
  });

  it('parses YYYY-MM-DD and refuses anything else, naming the field', () => {
    expect(parseDay('2024-02-29', 'since')).toBe(20240229);
    for (const bad of ['2023-02-29', '2024-13-01', '24-01-01', 'yesterday', '2024-1-1']) {
      expect(() => parseDay(bad, 'since')).toThrow(/since ".*" is not a date; use YYYY-MM-DD/);
    }
  });
});

describe('openSource', () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a file changed since the scan: swapped for a symlink, its folder swapped for one', async () => {
    dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'magpie-sources-')));
    const ws = path.join(dir, 'ws');
    mkdirSync(path.join(ws, 'memory', '202401'), { recursive: true });
    mkdirSync(path.join(dir, 'outside', '202401'), { recursive: true });
    writeFileSync(path.join(ws, 'memory', '202401', '20240101.md'), '- inside\n');
    writeFileSync(path.join(dir, 'outside', '202401', '20240101.md'), '- outside\n');
    const [scanned] = scanSources(ws);
    expect(scanned).toMatchObject({ rel: 'memory/202401/20240101.md', kind: 'note', day: 20240101 });
    const handle = await openSource(ws, scanned!);
    expect(handle).toBeDefined();
    await handle!.close();

    // The folder swapped for a link to an outside folder holding a file of the same name.
    rmSync(path.join(ws, 'memory', '202401'), { recursive: true });
    symlinkSync(path.join(dir, 'outside', '202401'), path.join(ws, 'memory', '202401'));
    expect(await openSource(ws, scanned!)).toBeUndefined();
    expect(
      await openSource(ws, { ...scanned!, ...inodeOf(path.join(dir, 'outside', '202401', '20240101.md')) }),
    ).toBeUndefined();
  });
});

function inodeOf(file: string): { dev: number; ino: number } {
  const { dev, ino } = statSync(file);
  return { dev, ino };
}
