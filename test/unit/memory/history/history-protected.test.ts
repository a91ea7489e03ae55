/**
 * The history folder is out of the tools' reach: the file tools refuse to
 * write into `.memory-history/` however the path is spelled (`..`, a case
 * change, an absolute path, a symlink to it, /proc/self/cwd), and exec's guard
 * refuses commands that would change or delete it. Its commits stay intact.
 */
import { readFile, symlink } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryHistory } from '../../../../src/memory/history/history.js';
import { createAppendFileTool } from '../../../../src/tools/append-file.js';
import { createEditFileTool } from '../../../../src/tools/edit-file.js';
import { denyReason } from '../../../../src/tools/exec-policy.js';
import { ToolRegistry } from '../../../../src/tools/registry.js';
import { createWriteFileTool } from '../../../../src/tools/write-file.js';
import { tempDirPerTest } from '../../../fakes/workspace.js';
import { toolContext } from '../../tools/helpers.js';

let ws: string;
let history: MemoryHistory;
let tools: ToolRegistry;

tempDirPerTest((dir) => {
  ws = dir;
});
beforeEach(async () => {
  history = new MemoryHistory({ workspace: ws });
  tools = new ToolRegistry([
    createWriteFileTool(ws, { history }),
    createEditFileTool(ws, { history }),
    createAppendFileTool(ws, { history }),
  ]);
  await tools.execute(
    'write_file',
    JSON.stringify({ path: 'memory/MEMORY.md', content: '- a fact\n' }),
    toolContext(ws),
  );
});
const call = (name: string, args: Record<string, unknown>) =>
  tools.execute(name, JSON.stringify(args), toolContext(ws));

describe('the history folder is read-only to tools', () => {
  const spellings = () => [
    '.memory-history/config',
    '.memory-history/hooks/post-commit',
    './.memory-history/HEAD',
    'memory/../.memory-history/config',
    '.MEMORY-HISTORY/config',
    `${ws}/.memory-history/config`,
    `${ws}/memory/../.memory-history/config`,
  ];

  it.each([
    ['write_file', (p: string) => ({ path: p, content: '[core]\n\tfsmonitor = touch /tmp/pwned\n' })],
    ['append_file', (p: string) => ({ path: p, content: '[core]\n\tfsmonitor = touch /tmp/pwned\n' })],
    ['edit_file', (p: string) => ({ path: p, old_text: 'bare = true', new_text: 'bare = false' })],
  ])('%s refuses every spelling of a path in .memory-history/', async (name, args) => {
    const config = await readFile(path.join(ws, '.memory-history', 'config'), 'utf8');
    for (const requested of spellings()) {
      const result = await call(name, args(requested));
      expect(result.forLLM, requested).toMatch(
        /is in \.memory-history\/, which the tools may read but not change|outside the workspace/,
      );
    }
    expect(await readFile(path.join(ws, '.memory-history', 'config'), 'utf8')).toBe(config);
  });

  it('refuses a write through a symlink to the history folder, and through /proc/self/cwd', async () => {
    await symlink(path.join(ws, '.memory-history'), path.join(ws, 'h'));
    const through = await call('write_file', { path: 'h/config', content: 'x' });
    expect(through.forLLM).toMatch(/^Error: /);
    const proc = await call('write_file', { path: '/proc/self/cwd/.memory-history/config', content: 'x' });
    expect(proc.forLLM).toMatch(/^Error: path ".*" is outside the workspace/);
    const log = await history.log();
    expect(log.map((e) => e.who)).toEqual(['write_file']);
    expect(await readFile(path.join(ws, '.memory-history', 'config'), 'utf8')).not.toContain('x\n');
  });

  it.each([
    'rm -r .memory-history',
    'rm ./.memory-history/objects/pack/x',
    'echo x > .memory-history/config',
    'rm -r memory/../.memory-history',
    'cd memory && rm -r ../.memory-history',
    'git --git-dir=.memory-history update-ref -d HEAD > .memory-history/HEAD',
    'mv .memory-history old',
    'sed -i s/bare/x/ .memory-history/config',
  ])("exec's guard refuses %j", (command) => {
    expect(denyReason(command, { workspace: ws })).toBe('changing .memory-history/ (read-only)');
  });

  it.each(['rm -rf .memory-history', 'echo x > /proc/self/cwd/.memory-history/config'])(
    "exec's guard refuses %j too (for its own reason)",
    (command) => {
      expect(denyReason(command, { workspace: ws })).toEqual(expect.any(String));
    },
  );

  it("exec's guard lets a command read the history", () => {
    expect(denyReason('cat .memory-history/HEAD', { workspace: ws })).toBeUndefined();
  });
});
