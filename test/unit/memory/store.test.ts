import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hasContent, MemoryStore } from '../../../src/memory/store.js';

let ws: string;
let clock: Date;
const now = () => clock;

beforeEach(async () => {
  ws = await mkdtemp(path.join(tmpdir(), 'magpie-memory-'));
});
afterEach(async () => {
  await rm(ws, { recursive: true, force: true });
});

describe('MemoryStore', () => {
  it('puts MEMORY.md and daily notes where the design says', () => {
    clock = new Date('2026-11-22T10:00:00Z');
    const memory = new MemoryStore({ workspace: ws, timezone: 'UTC', now });
    expect(memory.longTermPath).toBe(path.join(ws, 'memory', 'MEMORY.md'));
    expect(memory.todayPath()).toBe(path.join(ws, 'memory', '202611', '20261122.md'));
  });

  it('dates notes in the configured time zone', () => {
    clock = new Date('2026-11-22T23:30:00Z');
    expect(new MemoryStore({ workspace: ws, timezone: 'Asia/Tokyo', now }).todayPath()).toMatch(
      /202611[/\\]20261123\.md$/,
    );
    expect(new MemoryStore({ workspace: ws, timezone: 'America/New_York', now }).todayPath()).toMatch(
      /20261122\.md$/,
    );
  });

  it('starts a new note with the date header and appends across a date change', async () => {
    clock = new Date('2026-11-30T23:59:00Z');
    const memory = new MemoryStore({ workspace: ws, timezone: 'UTC', now });
    await memory.appendToday('- walked the dog');
    await memory.appendToday('- booked the dentist\n');
    const first = memory.todayPath();
    expect(await readFile(first, 'utf8')).toBe('# 2026-11-30\n\n- walked the dog\n- booked the dentist\n');

    clock = new Date('2026-12-01T00:01:00Z');
    await memory.appendToday('- new month');
    expect(memory.todayPath()).toBe(path.join(ws, 'memory', '202612', '20261201.md'));
    expect(await memory.readToday()).toBe('# 2026-12-01\n\n- new month\n');
    expect(await readFile(first, 'utf8')).toContain('booked the dentist');
  });

  it('returns the notes of the last N days, oldest first, across a month boundary', async () => {
    const memory = new MemoryStore({ workspace: ws, timezone: 'UTC', now });
    for (const day of ['2026-11-28', '2026-11-29', '2026-11-30', '2026-12-01']) {
      clock = new Date(`${day}T12:00:00Z`);
      await memory.appendToday(`note of ${day}`);
    }
    const recent = await memory.getRecentDailyNotes();
    expect(recent).not.toContain('note of 2026-11-28');
    const order = ['2026-11-29', '2026-11-30', '2026-12-01'].map((d) => recent.indexOf(`note of ${d}`));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(await memory.getRecentDailyNotes(1)).toBe('# 2026-12-01\n\nnote of 2026-12-01');
  });

  it('writes long-term memory atomically and reads it back', async () => {
    clock = new Date('2026-11-22T10:00:00Z');
    const memory = new MemoryStore({ workspace: ws, timezone: 'UTC', now });
    expect(await memory.readLongTerm()).toBe('');
    await memory.writeLongTerm('# Long-term memory\n\n- cat: Miso\n');
    await memory.writeLongTerm('# Long-term memory\n\n- cat: Miso\n- likes tea\n');
    expect(await memory.readLongTerm()).toBe('# Long-term memory\n\n- cat: Miso\n- likes tea\n');
    expect(await readdir(path.join(ws, 'memory'))).toEqual(['MEMORY.md']);
  });

  it('builds the memory context, empty when there is nothing (a header-only MEMORY.md counts as nothing)', async () => {
    clock = new Date('2026-11-22T10:00:00Z');
    const memory = new MemoryStore({ workspace: ws, timezone: 'UTC', now });
    expect(await memory.getMemoryContext()).toBe('');
    await mkdir(path.join(ws, 'memory'), { recursive: true });
    await writeFile(memory.longTermPath, '# Long-term memory\n\n<!-- facts go here -->\n');
    expect(await memory.getMemoryContext()).toBe('');
    await writeFile(memory.longTermPath, '# Long-term memory\n\n- cat: Miso\n');
    await memory.appendToday('- talked about cats');
    const context = await memory.getMemoryContext();
    expect(context).toContain('- cat: Miso');
    expect(context).toContain('- talked about cats');
    expect(context.indexOf('Miso')).toBeLessThan(context.indexOf('talked about cats'));
  });

  it('rejects an unknown time zone when built', () => {
    expect(() => new MemoryStore({ workspace: ws, timezone: 'Mars/Olympus' })).toThrow(RangeError);
  });
});

describe('hasContent', () => {
  it('ignores headings, blank lines and HTML comments', () => {
    expect(hasContent('# Title\n\n<!--\n- example\n-->\n## Sub\n')).toBe(false);
    expect(hasContent('# Title\nreal text')).toBe(true);
    expect(hasContent('#hashtag is text')).toBe(true);
  });
});
