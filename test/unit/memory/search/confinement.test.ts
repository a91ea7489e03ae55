/**
 * Memory search reads MEMORY.md, daily notes and session logs, and nothing
 * else: not other workspace files, and nothing outside through a symlink
 * (to a file or a folder, placed before or after the file was indexed), a
 * hard link or a FIFO named like a note. Every planted file holds the same
 * word as one legitimate note, which must be the only hit.
 */
import { execFileSync } from 'node:child_process';
import { linkSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendSession, line, type TempSpace, tempSpace, writeNote } from './fixtures.js';

let space: TempSpace;
beforeEach(() => {
  space = tempSpace();
  writeNote(space.ws, '2024-01-15', ['- The word of the day: zanzibar.']);
});
afterEach(() => space.cleanup());

const SECRET = '- zanzibar lives here too\n';

/** The one legitimate hit, and nothing else. */
async function onlyTheLegitimateNote(): Promise<void> {
  const result = await space.index().search('zanzibar', { limit: 50 });
  expect(result.hits.map((h) => h.path)).toEqual(['memory/202401/20240115.md']);
}

describe('memory search is confined to memory and sessions', () => {
  it('never returns other workspace files, files of other names, or summaries', async () => {
    writeFileSync(path.join(space.ws, 'AGENTS.md'), SECRET);
    writeFileSync(path.join(space.ws, '.env'), `OPENAI_API_KEY=${SECRET}`);
    mkdirSync(path.join(space.ws, 'skills', 'x'), { recursive: true });
    writeFileSync(path.join(space.ws, 'skills', 'x', 'SKILL.md'), SECRET);
    writeFileSync(path.join(space.ws, 'memory', 'people.md'), SECRET);
    writeFileSync(path.join(space.ws, 'memory', 'memory.md'), SECRET);
    mkdirSync(path.join(space.ws, 'memory', '202402'));
    writeFileSync(path.join(space.ws, 'memory', '202402', 'notes.md'), SECRET);
    writeFileSync(path.join(space.ws, 'memory', '202402', '20240230.md'), SECRET); // no such day
    writeFileSync(path.join(space.ws, 'memory', '202402', '20240301.md'), SECRET); // wrong month folder
    writeFileSync(path.join(space.ws, 'memory', '202402', '20240201.md.bak'), SECRET);
    writeFileSync(
      path.join(space.ws, 'sessions', 'cli_default.summary.json'),
      JSON.stringify({ summary: SECRET }),
    );
    writeFileSync(path.join(space.ws, 'sessions', 'notes.txt'), SECRET);
    writeFileSync(
      path.join(space.ws, 'sessions', 'a.b.c.jsonl'),
      line('user', SECRET, '2024-01-01T00:00:00Z'),
    );
    await onlyTheLegitimateNote();
  });

  it('never follows a symlink: to a file, to a folder, or as the memory folder itself', async () => {
    writeFileSync(path.join(space.outside, 'secret.md'), SECRET);
    writeFileSync(path.join(space.outside, 'secret.jsonl'), line('user', SECRET, '2024-01-01T00:00:00Z'));
    mkdirSync(path.join(space.outside, 'month'));
    writeFileSync(path.join(space.outside, 'month', '20240301.md'), SECRET);
    mkdirSync(path.join(space.ws, 'memory', '202402'));
    symlinkSync(
      path.join(space.outside, 'secret.md'),
      path.join(space.ws, 'memory', '202402', '20240201.md'),
    );
    symlinkSync(path.join(space.outside, 'secret.md'), path.join(space.ws, 'memory', 'MEMORY.md'));
    symlinkSync(path.join(space.outside, 'month'), path.join(space.ws, 'memory', '202403'));
    symlinkSync(path.join(space.outside, 'secret.jsonl'), path.join(space.ws, 'sessions', 'cli_evil.jsonl'));
    // Inside the workspace, but not memory: a link to another workspace file is refused too.
    writeFileSync(path.join(space.ws, 'AGENTS.md'), SECRET);
    symlinkSync('../../AGENTS.md', path.join(space.ws, 'memory', '202402', '20240202.md'));
    await onlyTheLegitimateNote();

    // The memory folder itself swapped for a link to a folder that looks like one.
    const realMemory = path.join(space.outside, 'memory');
    renameSync(path.join(space.ws, 'memory'), realMemory);
    symlinkSync(realMemory, path.join(space.ws, 'memory'));
    expect((await space.index().search('zanzibar')).hits).toEqual([]);
  });

  it('drops a note swapped for a symlink after it was indexed', async () => {
    const note = path.join(space.ws, 'memory', '202401', '20240116.md');
    writeFileSync(note, '- quokka sighting\n');
    expect((await space.index().search('quokka')).hits).toHaveLength(1);
    writeFileSync(path.join(space.outside, 'secret.md'), '- quokka secret from outside\n');
    rmSync(note);
    symlinkSync(path.join(space.outside, 'secret.md'), note);
    expect((await space.index().search('quokka')).hits).toEqual([]);
  });

  it('refuses hard-linked files, which may have a name outside', async () => {
    writeFileSync(path.join(space.outside, 'hard.md'), SECRET);
    mkdirSync(path.join(space.ws, 'memory', '202402'));
    linkSync(path.join(space.outside, 'hard.md'), path.join(space.ws, 'memory', '202402', '20240201.md'));
    writeFileSync(path.join(space.outside, 'hard.jsonl'), line('user', SECRET, '2024-01-01T00:00:00Z'));
    linkSync(path.join(space.outside, 'hard.jsonl'), path.join(space.ws, 'sessions', 'cli_hard.jsonl'));
    await onlyTheLegitimateNote();
  });

  it('skips a FIFO named like a note without blocking', async () => {
    mkdirSync(path.join(space.ws, 'memory', '202402'));
    execFileSync('mkfifo', [path.join(space.ws, 'memory', '202402', '20240201.md')]);
    execFileSync('mkfifo', [path.join(space.ws, 'sessions', 'cli_fifo.jsonl')]);
    await onlyTheLegitimateNote();
  });

  it('still finds what belongs: MEMORY.md, notes and logs (the control)', async () => {
    writeFileSync(path.join(space.ws, 'memory', 'MEMORY.md'), SECRET);
    appendSession(space.ws, 'cli_default', [line('user', 'zanzibar trip', '2024-02-01T10:00:00Z')]);
    const result = await space.index().search('zanzibar');
    expect(result.hits.map((h) => h.path).sort()).toEqual([
      'memory/202401/20240115.md',
      'memory/MEMORY.md',
      'sessions/cli_default.jsonl',
    ]);
  });
});
