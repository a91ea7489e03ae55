/**
 * The file tools under a symlink-swap race: another process renames a folder
 * and a symlink to an outside folder back and forth while read_file,
 * write_file, edit_file, append_file and list_dir run through it many times.
 * No call may read the outside secret or change anything outside.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, readdir, readFile, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createAppendFileTool } from '../../../src/tools/append-file.js';
import { createEditFileTool } from '../../../src/tools/edit-file.js';
import { createListDirTool } from '../../../src/tools/list-dir.js';
import { createReadFileTool } from '../../../src/tools/read-file.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import type { ToolResult } from '../../../src/tools/types.js';
import { createWriteFileTool } from '../../../src/tools/write-file.js';
import { killAndWait } from '../../fakes/process.js';
import { waitFor } from '../../fakes/wait-for.js';
import { workspaceBesideOutsidePerTest } from '../../fakes/workspace.js';
import { toolContext } from './helpers.js';

/**
 * The attacker, in its own process until killed; prints its swap count.
 * `folder`: `d` is renamed between the real folder and a symlink to the
 * outside folder (three renames; a folder a tool created in the gap is
 * removed). `link`: `d` stays a symlink, atomically retargeted between the
 * inside folder and the outside one.
 */
const SWAPPER = `
const { renameSync, rmSync, symlinkSync } = require('node:fs');
const [style, d, spare, hold, inside, outside] = process.argv.slice(1);
const move = (from, to) => {
  try { renameSync(from, to); }
  catch (err) {
    if (err.code === 'ENOENT') return;
    if (!['EEXIST', 'ENOTEMPTY', 'EISDIR', 'ENOTDIR'].includes(err.code)) throw err;
    rmSync(to, { recursive: true, force: true });
    renameSync(from, to);
  }
};
let swaps = 0;
const burst = () => {
  for (let i = 0; i < 100; i++) {
    if (style === 'folder') { move(d, hold); move(spare, d); move(hold, spare); }
    else { symlinkSync(swaps % 2 ? inside : outside, hold); renameSync(hold, d); }
    swaps++;
  }
  process.stdout.write(swaps + '\\n');
  setImmediate(burst);
};
burst();
`;

const SECRET = 'TOP-SECRET-outside';
const OUTSIDE_FILES = { 'f.txt': `${SECRET}\n`, 'log.txt': 'outside log\n', 'e.txt': `token ${SECRET}\n` };

describe('file tools under a symlink swap race', () => {
  let ws: string;
  let outside: string;
  let swapper: ChildProcess | undefined;

  workspaceBesideOutsidePerTest(async (dirs) => {
    ({ ws, outside } = dirs);
    await mkdir(path.join(ws, 'd'), { recursive: true });
    for (const [name, text] of Object.entries(OUTSIDE_FILES)) await writeFile(path.join(outside, name), text);
    await writeFile(path.join(outside, 'only-outside.marker'), '');
    await writeFile(path.join(ws, 'd', 'f.txt'), 'inside text\n');
    await writeFile(path.join(ws, 'd', 'log.txt'), '');
    await writeFile(path.join(ws, 'd', 'e.txt'), 'token 0\n');
  });

  afterEach(async () => {
    await killAndWait(swapper);
    swapper = undefined;
  });

  const startSwapper = async (style: 'folder' | 'link'): Promise<() => number> => {
    if (style === 'folder') {
      await symlink(outside, path.join(ws, 'spare'));
    } else {
      await rename(path.join(ws, 'd'), path.join(ws, 'real'));
      await symlink('real', path.join(ws, 'd'));
    }
    const child = spawn(
      process.execPath,
      ['-e', SWAPPER, style, ...['d', 'spare', 'hold'].map((name) => path.join(ws, name)), 'real', outside],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    swapper = child;
    let swaps = 0;
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      const last = chunk.trim().split('\n').pop();
      if (last) swaps = Number(last);
    });
    await waitFor(() => swaps > 0, 10_000, 'the swapper to start');
    return () => swaps;
  };

  const expectOutsideUntouched = async (): Promise<void> => {
    expect((await readdir(outside)).sort()).toEqual(
      [...Object.keys(OUTSIDE_FILES), 'only-outside.marker'].sort(),
    );
    for (const [name, text] of Object.entries(OUTSIDE_FILES)) {
      expect(await readFile(path.join(outside, name), 'utf8')).toBe(text);
    }
  };

  it.each([
    ['a folder renamed to and from a symlink to an outside folder', 'folder'],
    ['a symlink retargeted between an inside and an outside folder', 'link'],
  ] as const)('with %s, no call reads the outside secret or writes outside', async (_, style) => {
    const registry = new ToolRegistry([
      createReadFileTool(ws),
      createWriteFileTool(ws),
      createEditFileTool(ws),
      createAppendFileTool(ws),
      createListDirTool(ws),
    ]);
    const ctx = toolContext(ws);
    const swaps = await startSwapper(style);
    const results: { name: string; result: ToolResult }[] = [];
    // At least 120 rounds, and on until the swapper has swapped 1,000 times under them: a busy
    // machine slows the swapper (a process of its own) more than these calls.
    for (let i = 0; i < 120 || (swaps() <= 1000 && i < 2_000); i++) {
      const calls: [string, Record<string, unknown>][] = [
        ['read_file', { path: 'd/f.txt' }],
        ['read_file', { path: 'd/e.txt' }],
        ['write_file', { path: 'd/f.txt', content: 'inside text\n' }],
        ['write_file', { path: `d/new-${i}.txt`, content: 'new\n' }],
        ['append_file', { path: 'd/log.txt', content: `line ${i}\n` }],
        ['edit_file', { path: 'd/e.txt', old_text: 'token', new_text: 'token' }],
        ['list_dir', { path: 'd' }],
      ];
      const batch = await Promise.all(
        calls.map(async ([name, args]) => ({
          name,
          result: await registry.execute(name, JSON.stringify(args), ctx),
        })),
      );
      results.push(...batch);
    }
    const swapsDone = swaps();
    swapper?.kill('SIGKILL');

    const leaked = results.filter(
      ({ result }) => result.forLLM.includes(SECRET) || result.forLLM.includes('only-outside'),
    );
    expect(leaked).toEqual([]);
    // Every answer is a success or a one-line refusal; nothing else (no crash, no odd error).
    const refusal =
      /^Error: (path "d(\/[^"]*)?" (is outside the workspace|changed while it was being opened)|file not found: d\/|folder not found: d|d\/[^ ]* is a file, not a folder|path "d\/[^"]*" goes through)/;
    const odd = results.filter(({ result }) => result.isError && !refusal.test(result.forLLM));
    expect(odd).toEqual([]);
    const succeeded = results.filter(({ result }) => !result.isError).length;
    const refused = results.filter(({ result }) => result.isError).length;
    expect(succeeded).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0); // the race was really run through both states
    expect(swapsDone).toBeGreaterThan(1000);
    await expectOutsideUntouched();
  });
});
