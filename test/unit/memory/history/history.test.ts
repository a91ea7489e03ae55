/**
 * MEMORY.md's history with the real `git`: a tool's change, a hand edit and an
 * undo each become a commit saying who; undo restores the content before a
 * change as a new commit and refuses an unknown rev; /forget removes what
 * matches every word and is undoable.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { forget } from '../../../../src/memory/history/forget.js';
import { MemoryHistory } from '../../../../src/memory/history/history.js';
import { createEditFileTool } from '../../../../src/tools/edit-file.js';
import { ToolRegistry } from '../../../../src/tools/registry.js';
import { createWriteFileTool } from '../../../../src/tools/write-file.js';
import { tempDirPerTest } from '../../../fakes/workspace.js';
import { toolContext } from '../../tools/helpers.js';

let ws: string;
let history: MemoryHistory;
let tools: ToolRegistry;
const memoryFile = () => path.join(ws, 'memory', 'MEMORY.md');
const memory = () => readFile(memoryFile(), 'utf8');

tempDirPerTest((dir) => {
  ws = dir;
});
beforeEach(() => {
  history = new MemoryHistory({ workspace: ws });
  tools = new ToolRegistry([createWriteFileTool(ws, { history }), createEditFileTool(ws, { history })]);
});
const call = (name: string, args: Record<string, unknown>) =>
  tools.execute(name, JSON.stringify(args), toolContext(ws));

describe('memory history', () => {
  it('records a tool edit under the tool, a hand edit as "hand edit", and counts the lines', async () => {
    await call('write_file', { path: 'memory/MEMORY.md', content: '# Memory\n\n- Ana likes tea\n' });
    await writeFile(memoryFile(), '# Memory\n\n- Ana likes green tea\n- Bruno plays chess\n');
    await call('edit_file', { path: 'memory/MEMORY.md', old_text: 'chess', new_text: 'go' });

    const log = await history.log();
    expect(log.map((e) => [e.who, e.added, e.removed])).toEqual([
      ['edit_file', 1, 1],
      ['hand edit', 2, 1],
      ['write_file', 3, 0],
    ]);
    expect(log[0]?.summary).toBe('+ - Bruno plays go (and 1 more line)');
    expect(log[0]?.rev).toMatch(/^[0-9a-f]{7}$/);
    const diff = await history.diff(log[1]!.rev);
    expect(diff).toContain('-- Ana likes tea\n+- Ana likes green tea\n+- Bruno plays chess\n');
  });

  it('a file tool change elsewhere records nothing', async () => {
    await call('write_file', { path: 'notes/todo.md', content: 'buy milk\n' });
    expect(await history.log()).toEqual([]);
  });

  it('undo restores the content before a change as a new commit "undo REV"; later changes are kept in the log', async () => {
    await call('write_file', { path: 'memory/MEMORY.md', content: '- one\n' });
    await call('write_file', { path: 'memory/MEMORY.md', content: '- one\n- two\n' });
    await call('write_file', { path: 'memory/MEMORY.md', content: '- one\n- two\n- three\n' });
    const [third, second] = await history.log();

    await history.undo(third!.rev);
    expect(await memory()).toBe('- one\n- two\n');
    await history.undo(second!.rev);
    expect(await memory()).toBe('- one\n');

    const log = await history.log();
    expect(log.map((e) => e.who)).toEqual(['undo', 'undo', 'write_file', 'write_file', 'write_file']);
    expect(log[0]?.summary).toBe(`undo ${second!.rev}`);
    // History is never rewritten: the undone change can itself be undone.
    await history.undo(log[0]!.rev);
    expect(await memory()).toBe('- one\n- two\n');
  });

  it('undo refuses an unknown rev, a rev that is not a commit name, and the first version, changing nothing', async () => {
    await call('write_file', { path: 'memory/MEMORY.md', content: '- one\n' });
    const [first] = await history.log();
    for (const rev of ['deadbeef', '--all', 'HEAD:MEMORY.md', 'main@{1}']) {
      await expect(history.undo(rev)).rejects.toMatchObject({
        code: 'NOT_FOUND',
        message: expect.stringContaining(`unknown revision "${rev}"`),
      });
    }
    await expect(history.undo(first!.rev)).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: expect.stringContaining('first recorded version'),
    });
    expect(await memory()).toBe('- one\n');
    expect(await history.log()).toHaveLength(1);
  });

  it('a hand edit made before undo is recorded first, so it is not lost', async () => {
    await call('write_file', { path: 'memory/MEMORY.md', content: '- one\n' });
    await call('write_file', { path: 'memory/MEMORY.md', content: '- one\n- two\n' });
    await writeFile(memoryFile(), '- one\n- two\n- by hand\n');
    await history.undo('HEAD');
    expect(await memory()).toBe('- one\n- two\n');
    expect((await history.log()).map((e) => e.who).slice(0, 2)).toEqual(['undo', 'hand edit']);
  });

  it('noticeHandEdit records a hand edit once, and nothing while the file is unchanged', async () => {
    await call('write_file', { path: 'memory/MEMORY.md', content: '- one\n' });
    expect(await history.noticeHandEdit()).toBeUndefined();
    await writeFile(memoryFile(), '- one\n- changed by hand\n');
    expect(await history.noticeHandEdit()).toMatch(/^[0-9a-f]{7}$/);
    expect(await history.noticeHandEdit()).toBeUndefined();
    expect((await history.log()).map((e) => e.who)).toEqual(['hand edit', 'write_file']);
  });
});

describe('/forget', () => {
  const start =
    '# People\n\n- Ana likes tea\n- Bruno has a dentist appointment on Tuesday\n  at 10:00 in Porto\n\n# Places\n\n- The dentist is on Rua Direita\n';

  it('removes every bullet holding all the words (case-insensitive, continuation lines too) and shows before and after', async () => {
    await call('write_file', { path: 'memory/MEMORY.md', content: start });
    const result = await forget(history, 'DENTIST tuesday');
    expect(await memory()).toBe(
      '# People\n\n- Ana likes tea\n\n# Places\n\n- The dentist is on Rua Direita\n',
    );
    expect(result.reply).toContain('Forgot 1 item from memory (matching "dentist tuesday").');
    expect(result.reply).toContain(
      'Before:\n# People\n- Ana likes tea\n- Bruno has a dentist appointment on Tuesday\n  at 10:00 in Porto\n\nAfter:\n# People\n- Ana likes tea\n',
    );
    expect(result.reply).toContain(`magpie memory undo ${result.rev}`);
    const [entry] = await history.log();
    expect(entry).toMatchObject({
      who: '/forget',
      summary: '/forget dentist tuesday: removed 1 item',
      removed: 2,
    });

    await history.undo(result.rev!);
    expect(await memory()).toBe(start);
  });

  it('says so when nothing matches, and asks for words when given none, changing nothing', async () => {
    await call('write_file', { path: 'memory/MEMORY.md', content: start });
    expect((await forget(history, 'dentist Friday')).reply).toBe(
      'Nothing in memory matches "dentist friday".',
    );
    expect((await forget(history, '   ')).reply).toMatch(/^Say what to forget/);
    expect((await forget(history, 'People')).reply).toBe('Nothing in memory matches "people".');
    expect(await memory()).toBe(start);
    expect(await history.log()).toHaveLength(1);
  });
});
