/**
 * The file tools' containment end to end: the built `magpie agent` against
 * the fake OpenAI server, the model calling read_file / append_file /
 * write_file on FIFOs, a hardlink to an outside file, sessions/, and through
 * a folder another process keeps swapping for a symlink to an outside
 * folder. Each is refused or harmless; the positive controls still work.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { link, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type FakeOpenAI,
  type FakeToolCall,
  type RecordedRequest,
  startFakeOpenAI,
} from '../fakes/openai-server.js';
import { killAndWait } from '../fakes/process.js';
import { initedFolder, removeFolder } from '../fakes/workspace.js';
import { collect, type Outcome } from './cli-helpers.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = path.join(root, 'dist', 'cli', 'bin.js');
const exec = promisify(execFile);
const SECRET = 'TOP-SECRET-e2e';

let dir: string;
let workspace: string;
let outside: string;
let fake: FakeOpenAI | undefined;
let swapper: ChildProcess | undefined;
const fifos: string[] = [];

/** Runs `magpie agent --chat <chat> -m <message>` and resolves with its exit code and output. */
async function agent(chat: string, message: string): Promise<Outcome> {
  const child = spawn(process.execPath, [bin, 'agent', '--chat', chat, '-m', message], {
    cwd: dir,
    env: {
      PATH: process.env.PATH,
      HOME: dir,
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: fake?.baseURL,
      MAGPIE_WORKSPACE: workspace,
      MAGPIE_STATE_DIR: path.join(dir, 'state'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return collect(child);
}

/** The tool results the model got, by call id. */
function toolResults(requests: RecordedRequest[]): Map<string, string> {
  const results = new Map<string, string>();
  for (const req of requests) {
    for (const m of req.body.messages as { role: string; tool_call_id?: string; content: string }[]) {
      if (m.role === 'tool' && m.tool_call_id) results.set(m.tool_call_id, m.content);
    }
  }
  return results;
}

const call = (id: string, name: string, args: Record<string, unknown>): FakeToolCall => ({
  id,
  name,
  arguments: JSON.stringify(args),
});

beforeAll(async () => {
  await exec('npm', ['run', 'build', '--silent'], { cwd: root, timeout: 120_000 });
  ({ dir, workspace } = await initedFolder('magpie-files-e2e-'));
  outside = path.join(dir, 'outside');
  await mkdir(outside);
  await writeFile(path.join(outside, 'secret.txt'), SECRET);
}, 150_000);

afterEach(async () => {
  await killAndWait(swapper);
  swapper = undefined;
  for (const fifo of fifos.splice(0)) closeSync(openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK));
  await fake?.close();
  fake = undefined;
});

afterAll(() => removeFolder(dir));

describe('magpie agent: file tools cannot be tricked', () => {
  it('refuses FIFOs, a hardlink out and writes to sessions/ in one turn, and still reads and writes inside', async () => {
    for (const i of [1, 2, 3, 4]) {
      const fifo = path.join(workspace, `pipe${i}`);
      execFileSync('mkfifo', [fifo]);
      fifos.push(fifo);
    }
    await link(path.join(outside, 'secret.txt'), path.join(workspace, 'hardlink.txt'));
    await writeFile(path.join(workspace, 'plain.txt'), 'plain text');
    fake = await startFakeOpenAI();
    fake.enqueue(
      {
        toolCalls: [
          ...[1, 2, 3, 4].map((i) => call(`fifo${i}`, 'read_file', { path: `pipe${i}` })),
          call('hl-read', 'read_file', { path: 'hardlink.txt' }),
          call('hl-append', 'append_file', { path: 'hardlink.txt', content: 'pwned' }),
          call('forge', 'write_file', { path: 'Sessions/..//sessions/cli_files.jsonl', content: '{}' }),
          call('plain', 'read_file', { path: 'plain.txt' }),
        ],
      },
      { toolCalls: [call('write', 'write_file', { path: 'notes/ok.md', content: 'fine' })] },
      { content: 'Done.' },
    );
    const started = performance.now();
    const out = await agent('files', 'try the files');
    expect(out.code).toBe(0);
    expect(out.stdout).toBe('Done.\n');
    expect(performance.now() - started).toBeLessThan(20_000);
    const results = toolResults(fake.requests);
    for (const i of [1, 2, 3, 4]) {
      expect(results.get(`fifo${i}`)).toBe(
        `Error: pipe${i} is a named pipe (FIFO); the file tools open only regular files and folders`,
      );
    }
    expect(results.get('hl-read')).toMatch(/^Error: hardlink\.txt has 2 hard links/);
    expect(results.get('hl-append')).toMatch(/^Error: hardlink\.txt has 2 hard links/);
    expect(results.get('forge')).toMatch(/is in sessions\/, which the tools may read but not change$/);
    expect(results.get('plain')).toBe('plain text');
    expect(results.get('write')).toBe('wrote 4 bytes to notes/ok.md');
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
    expect(await readFile(path.join(workspace, 'notes', 'ok.md'), 'utf8')).toBe('fine');
    const history = await readFile(path.join(workspace, 'sessions', 'cli_files.jsonl'), 'utf8');
    expect(history).toContain('try the files'); // the real history, not the forged '{}'
  });

  it('never reads or writes outside while a folder is swapped for a symlink to an outside folder', async () => {
    const swapped = path.join(workspace, 'swap');
    await mkdir(swapped);
    await writeFile(path.join(swapped, 'secret.txt'), 'inside copy');
    await symlink(outside, path.join(workspace, 'swap-link'));
    swapper = spawn(
      process.execPath,
      [
        '-e',
        `const { renameSync, rmSync } = require('node:fs');
         const [d, spare, hold] = process.argv.slice(1);
         const move = (from, to) => {
           try { renameSync(from, to); }
           catch (err) {
             if (err.code === 'ENOENT') return;
             if (!['EEXIST', 'ENOTEMPTY', 'EISDIR', 'ENOTDIR'].includes(err.code)) throw err;
             rmSync(to, { recursive: true, force: true }); // a folder a tool made in the gap
             renameSync(from, to);
           }
         };
         const burst = () => { for (let i = 0; i < 100; i++) { move(d, hold); move(spare, d); move(hold, spare); } setImmediate(burst); };
         burst();`,
        swapped,
        path.join(workspace, 'swap-link'),
        path.join(workspace, 'swap-hold'),
      ],
      { stdio: 'ignore' },
    );
    const rounds = 8;
    fake = await startFakeOpenAI({
      responder: (_req, index) =>
        index < rounds
          ? {
              toolCalls: [
                // Arguments differ from round to round, so the loop guard does not stop the turn.
                ...[1, 2, 3, 4, 5].map((k) =>
                  call(`r${index}-${k}`, 'read_file', {
                    path: 'swap/secret.txt',
                    limit: 1000 + index * 10 + k,
                  }),
                ),
                call(`w${index}`, 'append_file', { path: 'swap/secret.txt', content: `pwned ${index}\n` }),
                call(`n${index}`, 'write_file', { path: `swap/planted-${index}.txt`, content: 'pwned' }),
              ],
            }
          : { content: 'Finished.' },
    });
    const out = await agent('swap', 'read the swapped folder');
    expect(out.code).toBe(0);
    expect(out.stdout).toBe('Finished.\n');
    const results = [...toolResults(fake.requests).values()];
    expect(results).toHaveLength(rounds * 7);
    expect(results.filter((text) => text.includes(SECRET))).toEqual([]);
    // Both states of the race were met: reads inside succeeded, reads through the symlink were refused.
    expect(results.some((text) => text.startsWith('inside copy'))).toBe(true);
    expect(
      results.some((text) => /is outside the workspace|changed while it was being opened/.test(text)),
    ).toBe(true);
    expect(await readdir(outside)).toEqual(['secret.txt']);
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
  });
});
