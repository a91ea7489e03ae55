/**
 * MemoryIndex against real files and a real SQLite index in temporary
 * folders: planted facts found with their dates (old note, old conversation,
 * a note written a moment ago), no match, since/until, incremental syncs of
 * notes and append-only logs, /new renames, and an index that is missing,
 * damaged, built for another time zone or left locked by a crash.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatForModel } from '../../../../src/memory/search/format.js';
import { MemoryStore } from '../../../../src/memory/store.js';
import { JsonlSessionStore } from '../../../../src/sessions/jsonl-store.js';
import { appendSession, line, type TempSpace, TZ, tempSpace, writeNote } from './fixtures.js';

let space: TempSpace;
beforeEach(() => {
  space = tempSpace();
});
afterEach(() => space.cleanup());

/** Every file under a folder, relative. */
function listAll(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listAll(path.join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`],
  );
}

describe('finding what was said', () => {
  it('finds a fact in an old note, in an old conversation and in a note written just before, with dates', async () => {
    writeNote(space.ws, '2024-05-12', [
      '- Lunch with Ana.',
      '- Marta moved to Coimbra; new flat on Rua Direita.',
    ]);
    writeNote(space.ws, '2024-05-13', ['- Quiet day, read a book.']);
    appendSession(space.ws, 'telegram_42', [
      line('user', 'The plumber Rui left his number: 912 345 678', '2024-07-03T08:15:00Z'),
      line('assistant', 'Noted, I will remember it.', '2024-07-03T08:15:05Z'),
    ]);
    const index = space.index();
    const marta = await index.search('when did my sister Marta move to Coimbra?');
    expect(marta.hits[0]).toMatchObject({
      kind: 'note',
      path: 'memory/202405/20240512.md',
      line: 4,
      date: '2024-05-12',
    });
    expect(marta.hits[0]!.snippet.replace(/[\u0002\u0003]/g, '')).toContain('Marta moved to Coimbra');

    const plumber = await index.search("what was the plumber's number");
    expect(plumber.hits[0]).toMatchObject({
      kind: 'session',
      path: 'sessions/telegram_42.jsonl',
      line: 1,
      session: 'telegram:42',
      role: 'user',
      date: '2024-07-03',
      time: '09:15', // Lisbon, summer time
    });

    // Written through the real MemoryStore a moment before the search.
    const now = new Date('2025-02-03T10:00:00Z');
    const memory = new MemoryStore({ workspace: space.ws, timezone: TZ, now: () => now });
    await memory.appendToday('- Booked the dentist (Dr. Sousa) for Thursday 15:30.');
    const dentist = await index.search('dentist appointment');
    expect(dentist.hits).toHaveLength(1);
    expect(dentist.hits[0]).toMatchObject({ path: 'memory/202502/20250203.md', date: '2025-02-03' });
  });

  it('matches English word forms and folds accents', async () => {
    writeNote(space.ws, '2024-02-01', ['- We are moving the piano to São João next week.']);
    const index = space.index();
    expect((await index.search('moved piano')).hits).toHaveLength(1);
    expect((await index.search('sao joao')).hits).toHaveLength(1);
  });

  it('returns nothing for a word found nowhere, and says what it searched', async () => {
    writeFileSync(path.join(space.ws, 'memory', 'MEMORY.md'), '# Memory\n\n- Likes green tea.\n');
    writeNote(space.ws, '2024-01-01', ['- New year.']);
    appendSession(space.ws, 'cli_default', [line('user', 'hello', '2024-01-01T10:00:00Z')]);
    const result = await space.index().search('zeppelin');
    expect(result.hits).toEqual([]);
    expect(result.searched).toEqual({ notes: 1, sessions: 1, longTerm: true });
    expect(formatForModel('zeppelin', result, {})).toBe(
      'No results for "zeppelin" in MEMORY.md, 1 daily note and 1 conversation log. ' +
        'Try other words (a name, a place, a distinctive term).\n' +
        '(keyword search only: no embedding model is set (MAGPIE_EMBEDDING_MODEL))',
    );
  });

  it('never treats the query as FTS5 syntax', async () => {
    writeNote(space.ws, '2024-01-01', ['- The boiler NEAR the door was fixed.']);
    const index = space.index();
    for (const q of [
      'NEAR(boiler door)',
      '"boiler',
      'body:boiler',
      'boiler*',
      'boiler AND OR NOT',
      "boiler'); DROP TABLE chunk;--",
      '^boiler',
    ]) {
      expect((await index.search(q)).hits.length, q).toBe(1);
    }
    await expect(index.search('?! …')).rejects.toMatchObject({ code: 'TOOL_FAILED' });
  });

  it('puts chunks with every word first, then those with two, then those with one', async () => {
    writeNote(space.ws, '2024-03-01', ['- boiler boiler boiler boiler, the boiler again.']); // one word, many times
    writeNote(space.ws, '2024-03-02', ['- The plumber looked at the boiler.']); // two words
    writeNote(space.ws, '2024-03-03', ['- The plumber fixed the boiler leak.']); // all three
    writeNote(space.ws, '2024-03-04', ['- A leak under the sink.']); // one word
    const result = await space.index().search('plumber boiler leak');
    expect(result.hits.map((h) => h.date)).toEqual([
      '2024-03-03',
      '2024-03-02',
      expect.any(String),
      expect.any(String),
    ]);
    expect(
      result.hits
        .slice(2)
        .map((h) => h.date)
        .sort(),
    ).toEqual(['2024-03-01', '2024-03-04']);
  });

  it('ranks the note that holds more of the words first, and honours limit', async () => {
    for (let d = 1; d <= 9; d++) writeNote(space.ws, `2024-03-0${d}`, [`- Walked in the park, day ${d}.`]);
    writeNote(space.ws, '2024-03-10', ['- Walked in the park with Marta and the dog Bolinha.']);
    const result = await space.index().search('park Marta Bolinha', { limit: 3 });
    expect(result.hits).toHaveLength(3);
    expect(result.hits[0]!.date).toBe('2024-03-10');
    await expect(space.index().search('park', { limit: 51 })).rejects.toMatchObject({ code: 'TOOL_FAILED' });
  });
});

describe('since and until', () => {
  beforeEach(() => {
    writeFileSync(path.join(space.ws, 'memory', 'MEMORY.md'), '- The boiler is a Vaillant.\n');
    writeNote(space.ws, '2024-01-10', ['- Boiler serviced.']);
    writeNote(space.ws, '2024-06-10', ['- Boiler leaking again.']);
    appendSession(space.ws, 'cli_default', [
      line('user', 'Got a quote for a new boiler', '2024-03-01T23:30:00Z'), // 2024-03-01 in Lisbon (UTC+0)
    ]);
  });

  const dates = async (options: { since?: number; until?: number }) =>
    (await space.index().search('boiler', options)).hits.map((h) => h.date ?? 'MEMORY.md').sort();

  it('keep only what is dated in the range (inclusive); MEMORY.md, undated, only without them', async () => {
    expect(await dates({})).toEqual(['2024-01-10', '2024-03-01', '2024-06-10', 'MEMORY.md']);
    expect(await dates({ since: 20240301 })).toEqual(['2024-03-01', '2024-06-10']);
    expect(await dates({ until: 20240301 })).toEqual(['2024-01-10', '2024-03-01']);
    expect(await dates({ since: 20240201, until: 20240501 })).toEqual(['2024-03-01']);
    expect(await dates({ since: 20240701 })).toEqual([]);
  });

  it('refuses since after until', async () => {
    await expect(space.index().search('boiler', { since: 20240601, until: 20240101 })).rejects.toMatchObject({
      code: 'TOOL_FAILED',
    });
  });
});

describe('keeping the index up to date', () => {
  it('reads only what changed: nothing when nothing did, one note when one did', async () => {
    for (let d = 1; d <= 5; d++) writeNote(space.ws, `2024-04-0${d}`, [`- Day ${d}.`]);
    appendSession(space.ws, 'cli_default', [line('user', 'hi', '2024-04-01T10:00:00Z')]);
    const index = space.index();
    expect(await index.update()).toMatchObject({ read: 6, removed: 0, notes: 5, sessions: 1, rebuilt: true });
    expect(await index.update()).toMatchObject({ read: 0, removed: 0, rebuilt: false });
    writeNote(space.ws, '2024-04-03', ['- Day 3, rewritten: saw the eclipse.']);
    expect(await index.update()).toMatchObject({ read: 1, chunks: 1 });
    expect((await index.search('eclipse')).hits).toHaveLength(1);
    expect((await index.search('Day 3')).hits.map((h) => h.snippet)).not.toContain('- Day 3.');
  });

  it('reads an append-only log on from where it stopped, never twice, and waits for a half-written line', async () => {
    const rel = appendSession(space.ws, 'cli_default', [line('user', 'first alpha', '2024-04-01T10:00:00Z')]);
    const index = space.index();
    await index.update();
    appendSession(space.ws, 'cli_default', [
      line('assistant', 'second bravo', '2024-04-01T10:00:01Z'),
      '{"role":"user","content":"third charlie"', // half-written: no closing brace or newline yet
    ]);
    expect(await index.update()).toMatchObject({ read: 1, chunks: 1 });
    expect((await index.search('charlie')).hits).toEqual([]);
    appendSession(space.ws, 'cli_default', [',"ts":"2024-04-01T10:00:02Z"}\n']);
    expect(await index.update()).toMatchObject({ read: 1, chunks: 1 });
    const all = await index.search('alpha bravo charlie');
    expect(all.hits.map((h) => [h.line, h.role])).toEqual(
      expect.arrayContaining([
        [1, 'user'],
        [2, 'assistant'],
        [3, 'user'],
      ]),
    );
    expect(all.hits).toHaveLength(3);
    expect(all.hits.every((h) => h.path === rel)).toBe(true);
  });

  it('indexes user and assistant text only: no tool output, no tool-call arguments, no images', async () => {
    appendSession(space.ws, 'cli_default', [
      line(
        'user',
        [
          { type: 'text', text: 'what is in this photo of the harbour?' },
          { type: 'image', url: 'data:image/png;base64,eHlsb3Bob25l' },
        ],
        '2024-04-01T10:00:00Z',
      ),
      line('assistant', null, '2024-04-01T10:00:01Z', {
        toolCalls: [{ id: 'c1', name: 'exec', arguments: '{"command":"echo xylophone"}' }],
      }),
      line('tool', 'xylophone output', '2024-04-01T10:00:02Z', { toolCallId: 'c1' }),
      line('assistant', 'Boats in the harbour at dusk.', '2024-04-01T10:00:03Z'),
      'not json at all\n',
    ]);
    const index = space.index();
    expect((await index.search('xylophone')).hits).toEqual([]);
    expect((await index.search('eHlsb3Bob25l')).hits).toEqual([]);
    const harbour = await index.search('harbour');
    expect(harbour.hits.map((h) => h.role).sort()).toEqual(['assistant', 'user']);
  });

  it('notices a log rewritten in place and reads it again whole', async () => {
    appendSession(space.ws, 'cli_default', [line('user', 'original delta', '2024-04-01T10:00:00Z')]);
    const index = space.index();
    await index.update();
    truncateSync(path.join(space.ws, 'sessions', 'cli_default.jsonl'), 0);
    appendSession(space.ws, 'cli_default', [
      line('user', 'replacement echo', '2024-04-02T10:00:00Z'),
      line('user', 'replacement foxtrot', '2024-04-02T10:00:01Z'),
    ]);
    await index.update();
    expect((await index.search('delta')).hits).toEqual([]);
    expect((await index.search('echo foxtrot')).hits).toHaveLength(2);
  });

  it('follows a log renamed by /new without reading it again, and indexes the fresh one', async () => {
    const sessions = new JsonlSessionStore({ dir: path.join(space.ws, 'sessions') });
    await sessions.append('telegram:7', { role: 'user', content: 'before the reset: golf' });
    const index = space.index();
    await index.update();
    const archived = await sessions.reset('telegram:7');
    await sessions.append('telegram:7', { role: 'user', content: 'after the reset: hotel' });
    expect(await index.update()).toMatchObject({ read: 1, chunks: 1, removed: 0 });
    expect((await index.search('golf')).hits).toMatchObject([
      { path: `sessions/${archived}`, session: 'telegram:7' },
    ]);
    expect((await index.search('hotel')).hits).toMatchObject([{ path: 'sessions/telegram_7.jsonl' }]);
  });

  it('forgets a note that was deleted', async () => {
    writeNote(space.ws, '2024-04-01', ['- Secret santa: Bruno.']);
    const index = space.index();
    expect((await index.search('santa')).hits).toHaveLength(1);
    rmSync(path.join(space.ws, 'memory', '202404', '20240401.md'));
    expect((await index.search('santa')).hits).toEqual([]);
    expect(await index.update()).toMatchObject({ notes: 0 });
  });
});

describe('the index itself', () => {
  beforeEach(() => {
    writeNote(space.ws, '2024-04-01', ['- Paid the electricity bill.']);
  });

  it('lives in the state folder, outside the workspace, and adds nothing to the workspace', async () => {
    const before = listAll(space.ws);
    const index = space.index();
    await index.search('electricity');
    expect(index.dbPath).toBe(path.join(space.state, 'memory-index', 'index.db'));
    expect(existsSync(index.dbPath)).toBe(true);
    expect(listAll(space.ws)).toEqual(before);
    expect(statSync(path.join(space.state, 'memory-index')).mode & 0o077).toBe(0);
  });

  it('is rebuilt when deleted', async () => {
    const index = space.index();
    await index.search('electricity');
    rmSync(index.dbPath);
    expect(await index.update()).toMatchObject({ rebuilt: true, read: 1 });
    expect((await space.index().search('electricity')).hits).toHaveLength(1);
  });

  it('is rebuilt when its file is garbage or cut short', async () => {
    const index = space.index();
    await index.search('electricity');
    writeFileSync(index.dbPath, 'this is not a database '.repeat(500));
    expect((await space.index().search('electricity')).hits).toHaveLength(1);
    truncateSync(index.dbPath, Math.floor(statSync(index.dbPath).size / 2));
    expect((await space.index().search('electricity')).hits).toHaveLength(1);
  });

  it('is rebuilt when it was built for another time zone (days would differ)', async () => {
    appendSession(space.ws, 'cli_default', [line('user', 'late night kilo', '2024-04-01T23:30:00Z')]);
    expect((await space.index({ timezone: 'UTC' }).search('kilo')).hits[0]!.date).toBe('2024-04-01');
    const tokyo = space.index({ timezone: 'Asia/Tokyo' });
    expect(await tokyo.update()).toMatchObject({ rebuilt: true });
    expect((await tokyo.search('kilo')).hits[0]).toMatchObject({ date: '2024-04-02', time: '08:30' });
  });

  it("is opened although a crashed process left SQLite's lock folder behind", async () => {
    const index = space.index();
    await index.search('electricity');
    mkdirSync(`${index.dbPath}.lock`);
    expect((await space.index().search('electricity')).hits).toHaveLength(1);
  });

  it('is left alone, not rebuilt, while another program holds the database', async () => {
    const index = space.index();
    await index.search('electricity');
    const { DatabaseSync } = await import('node:sqlite');
    const other = new DatabaseSync(index.dbPath);
    try {
      other.exec('BEGIN IMMEDIATE');
      await expect(space.index().search('electricity')).rejects.toMatchObject({ code: 'TIMEOUT' });
      other.exec('ROLLBACK');
    } finally {
      other.close();
    }
    expect(await space.index().update()).toMatchObject({ rebuilt: false });
    expect((await space.index().search('electricity')).hits).toHaveLength(1);
  });

  it('serves overlapping calls of one process one at a time', async () => {
    const index = space.index();
    const results = await Promise.all(Array.from({ length: 8 }, () => index.search('electricity')));
    expect(results.every((r) => r.hits.length === 1)).toBe(true);
  });
});
