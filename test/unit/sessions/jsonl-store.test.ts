import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hasCode } from '../../../src/errors/index.js';
import type { ChatMessage } from '../../../src/providers/types.js';
import { JsonlSessionStore } from '../../../src/sessions/jsonl-store.js';

let dir: string;
let warnings: string[];
let store: JsonlSessionStore;

function capturingLogger() {
  const stream = new Writable({
    write(chunk, _enc, done) {
      warnings.push(String(chunk));
      done();
    },
  });
  return pino({ level: 'warn' }, stream);
}

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'magpie-sessions-'));
  warnings = [];
  store = new JsonlSessionStore({ dir: path.join(dir, 'sessions'), logger: capturingLogger() });
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const user = (content: string): ChatMessage => ({ role: 'user', content });
const strip = (entries: object[]) => entries.map(({ ts: _ts, ...rest }: { ts?: string }) => rest);

describe('JsonlSessionStore', () => {
  it('appends one JSON line per message with a timestamp and reads them back in order', async () => {
    await store.append('cli:default', user('one'));
    await store.append('cli:default', { role: 'assistant', content: 'two' }, user('three'));
    const file = path.join(dir, 'sessions', 'cli_default.jsonl');
    const lines = (await readFile(file, 'utf8')).trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(JSON.parse(lines[0]!)).toMatchObject({ role: 'user', content: 'one', ts: expect.any(String) });
    const history = await store.getHistory('cli:default');
    expect(strip(history)).toEqual([user('one'), { role: 'assistant', content: 'two' }, user('three')]);
  });

  it('returns an empty history for an unknown session', async () => {
    expect(await store.getHistory('cli:nobody')).toEqual([]);
    expect(await store.getSummary('cli:nobody')).toBeUndefined();
  });

  it('rejects invalid keys with INVALID_SESSION_KEY', async () => {
    const err = await store.append('..', user('x')).catch((e: unknown) => e);
    expect(hasCode(err, 'INVALID_SESSION_KEY')).toBe(true);
  });

  it('skips and logs a half-written last line, and later appends stay whole', async () => {
    await store.append('cli:a', user('one'), user('two'));
    const file = store.logPath('cli:a');
    await writeFile(file, `${await readFile(file, 'utf8')}{"role":"user","cont`);
    expect(strip(await store.getHistory('cli:a'))).toEqual([user('one'), user('two')]);
    expect(warnings.join('')).toContain('half-written last line');

    await store.append('cli:a', user('three'));
    expect(strip(await store.getHistory('cli:a'))).toEqual([user('one'), user('two'), user('three')]);
  });

  it('skips and logs a corrupt line in the middle', async () => {
    const file = store.logPath('cli:b');
    await store.append('cli:b', user('one'));
    await writeFile(file, `${await readFile(file, 'utf8')}not json\n{"no":"role"}\n`, { flag: 'w' });
    await store.append('cli:b', user('two'));
    expect(strip(await store.getHistory('cli:b'))).toEqual([user('one'), user('two')]);
    const text = warnings.join('');
    expect(text).toContain('corrupt line skipped');
    expect(text).toContain('"line":2');
    expect(text).toContain('"line":3');
  });

  it('only appends: inode and existing bytes unchanged, same bytes written at 10 and 10,000 messages', async () => {
    const line = (i: number) => `${JSON.stringify({ role: 'user', content: `m${i}`, ts: 't' })}\n`;
    const growth: number[] = [];
    for (const [key, count] of [
      ['cli:small', 10],
      ['cli:large', 10_000],
    ] as const) {
      const file = store.logPath(key);
      await store.append(key, user('seed'));
      await writeFile(file, Array.from({ length: count - 1 }, (_, i) => line(i)).join(''), { flag: 'a' });
      const before = await stat(file);
      const prefix = await readFile(file);
      await store.append(key, user('x'.repeat(50)));
      const after = await stat(file);
      const now = await readFile(file);
      expect(after.ino).toBe(before.ino);
      expect(now.subarray(0, prefix.length).equals(prefix)).toBe(true);
      growth.push(after.size - before.size);
      expect(await store.getHistory(key)).toHaveLength(count + 1);
    }
    expect(growth[0]).toBe(growth[1]);
  });

  it('serialises concurrent appends to one session: no interleaved partial lines', async () => {
    const big = 'y'.repeat(100_000);
    await Promise.all(Array.from({ length: 40 }, (_, i) => store.append('cli:c', user(`${i}:${big}`))));
    const history = await store.getHistory('cli:c');
    expect(history).toHaveLength(40);
    expect(warnings).toEqual([]);
    expect(history.map((m) => String(m.content).split(':')[0])).toEqual(
      Array.from({ length: 40 }, (_, i) => String(i)),
    );
  });

  it('applies writes of one session in call order: appends before a reset land in the archived log', async () => {
    await store.append('cli:o', user('seed'));
    const before = Promise.all([1, 2, 3].map((i) => store.append('cli:o', user(`old ${i}`))));
    const archived = store.reset('cli:o');
    const after = store.append('cli:o', user('new'));
    await Promise.all([before, after]);
    const name = await archived;
    const old = (await readFile(path.join(dir, 'sessions', name!), 'utf8')).trimEnd().split('\n');
    expect(old.map((l) => JSON.parse(l).content)).toEqual(['seed', 'old 1', 'old 2', 'old 3']);
    expect(strip(await store.getHistory('cli:o'))).toEqual([user('new')]);
  });

  it('keeps a summary beside the log; context history starts at keepFrom and is sanitised', async () => {
    await store.append(
      'cli:d',
      user('q1'),
      { role: 'assistant', content: null, toolCalls: [{ id: 'a', name: 'exec', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'a', content: 'out' },
      { role: 'assistant', content: 'a1' },
      user('q2'),
    );
    await store.setSummary('cli:d', 'the user asked q1', 2);
    expect(await store.getSummary('cli:d')).toBe('the user asked q1');
    const summaryFile = JSON.parse(await readFile(path.join(dir, 'sessions', 'cli_d.summary.json'), 'utf8'));
    expect(summaryFile).toMatchObject({ summary: 'the user asked q1', keepFrom: 2 });
    // keepFrom 2 lands on the tool result: the orphan is dropped, the log stays whole.
    expect(strip(await store.getContextHistory('cli:d'))).toEqual([
      { role: 'assistant', content: 'a1' },
      user('q2'),
    ]);
    expect(await store.getHistory('cli:d')).toHaveLength(5);
    expect((await readdir(path.join(dir, 'sessions'))).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('makes the sessions folder again when it was removed after the first append', async () => {
    await store.append('cli:f', user('one'));
    await rm(path.join(dir, 'sessions'), { recursive: true });
    await store.append('cli:f', user('two'));
    expect(strip(await store.getHistory('cli:f'))).toEqual([user('two')]);
  });

  it('a summary read asked for after setSummary sees the new summary, even with an older read in flight', async () => {
    await store.setSummary('cli:g', 'old', 0);
    const before = store.getSummary('cli:g');
    const write = store.setSummary('cli:g', 'new', 0);
    const after = store.getSummary('cli:g');
    await write;
    expect(['old', 'new']).toContain(await before); // raced the write, as before sharing existed
    expect(await after).toBe('new');
    const [a, b] = await Promise.all([store.getSummary('cli:g'), store.getContextHistory('cli:g')]);
    expect(a).toBe('new');
    expect(b).toEqual([]);
  });

  it('reset renames the log and summary and starts fresh', async () => {
    await store.append('cli:e', user('old'));
    await store.setSummary('cli:e', 'old summary', 1);
    const archived = await store.reset('cli:e');
    expect(archived).toMatch(/^cli_e\.\d{8}T\d{9}Z\.jsonl$/);
    const names = await readdir(path.join(dir, 'sessions'));
    expect(names).toContain(archived);
    expect(names).toContain(archived!.replace(/\.jsonl$/, '.summary.json'));
    expect(await store.getHistory('cli:e')).toEqual([]);
    expect(await store.getSummary('cli:e')).toBeUndefined();
    await store.append('cli:e', user('new'));
    expect(strip(await store.getHistory('cli:e'))).toEqual([user('new')]);
    expect(await store.reset('cli:never')).toBeUndefined();
  });

  it('two resets in the same millisecond keep both archives', async () => {
    await store.append('cli:f', user('1'));
    const first = store.reset('cli:f');
    const appended = store.append('cli:f', user('2'));
    const second = store.reset('cli:f');
    const [a, , b] = await Promise.all([first, appended, second]);
    expect(a).toBeDefined();
    expect(b).toBeDefined();
    expect(a).not.toBe(b);
  });

  it('lists live sessions with their keys, message counts and sizes (archives left out)', async () => {
    await store.append('telegram:-100/7', user('a'), user('b'));
    await store.append('cli:g', user('c'));
    await store.append('cli:h', user('d'));
    await store.reset('cli:h');
    const list = await store.list();
    const byKey = Object.fromEntries(list.map((s) => [s.key, s]));
    expect(Object.keys(byKey).sort()).toEqual(['cli:g', 'telegram:-100/7']);
    expect(byKey['telegram:-100/7']!.messages).toBe(2);
    expect(byKey['cli:g']!.bytes).toBeGreaterThan(0);
    expect(byKey['cli:g']!.updatedAt).toBeInstanceOf(Date);
  });
});
