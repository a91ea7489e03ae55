/**
 * Two processes' histories on one workspace never interleave (commits under
 * the lock, one after another on one line of history), and without `git` a
 * tool's change still goes ahead while the history says in one line why it
 * cannot record.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryHistory } from '../../../../src/memory/history/history.js';
import { tempDirPerTest } from '../../../fakes/workspace.js';

let ws: string;
tempDirPerTest((dir) => {
  ws = dir;
});

describe('memory history under concurrency', () => {
  it('records every one of 12 changes made at once by two writers, in one line of history', async () => {
    const a = new MemoryHistory({ workspace: ws });
    const b = new MemoryHistory({ workspace: ws });
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        (i % 2 === 0 ? a : b).write(i % 2 === 0 ? 'tool-a' : 'tool-b', `- fact ${i}\n`),
      ),
    );
    const log = await a.log();
    expect(log).toHaveLength(12);
    expect(log.filter((e) => e.who === 'tool-a')).toHaveLength(6);
    // The newest commit holds what the file holds: no write slipped between a change and its record.
    const last = await a.diff(log[0]!.rev);
    const content = await readFile(path.join(ws, 'memory', 'MEMORY.md'), 'utf8');
    expect(last).toContain(`+${content.trimEnd()}\n`);
  });
});

describe('memory history without git', () => {
  it('lets a change go ahead and fails log with one clear line', async () => {
    const saved = process.env.PATH;
    process.env.PATH = path.join(ws, 'no-bin');
    try {
      const history = new MemoryHistory({ workspace: ws });
      await history.around('write_file', () => history.store.writeLongTerm('- still written\n'));
      await history.around('write_file', () => history.store.writeLongTerm('- written again\n'));
      expect(await readFile(path.join(ws, 'memory', 'MEMORY.md'), 'utf8')).toBe('- written again\n');
      await expect(history.log()).rejects.toMatchObject({
        code: 'INTERNAL',
        message: 'git is not installed; the memory history needs it (apt-get install git)',
      });
    } finally {
      process.env.PATH = saved;
    }
  });
});
