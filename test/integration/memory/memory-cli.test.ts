/**
 * `magpie memory log | diff | undo` as a subprocess: a tool edit, a
 * consolidation and a hand edit each appear in the log with who made them;
 * diff shows a change; undo restores the content before a change as a new
 * entry and refuses an unknown rev with one line and exit 2.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { silentLogger } from '../../../src/log/index.js';
import { Consolidator } from '../../../src/memory/consolidation/consolidator.js';
import { MemoryHistory } from '../../../src/memory/history/history.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { createWriteFileTool } from '../../../src/tools/write-file.js';
import { providerFor } from '../../fakes/openai-provider.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../fakes/openai-server.js';
import { tempDirPerTest } from '../../fakes/workspace.js';
import { toolContext } from '../../unit/tools/helpers.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const BIN = path.join(ROOT, 'src/main.ts');
const TSX = import.meta.resolve('tsx');

let fake: FakeOpenAI;
let ws: string;
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake?.close();
});
tempDirPerTest((dir) => {
  ws = dir;
});

async function magpie(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return magpieWith({}, ...args);
}

async function magpieWith(
  extra: Record<string, string>,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', TSX, BIN, 'memory', ...args],
      {
        cwd: ws,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          MAGPIE_WORKSPACE: ws,
          OPENAI_API_KEY: 'sk-memory-cli',
          OPENAI_BASE_URL: fake.baseURL,
          MAGPIE_MODEL: 'fake-model',
          MAGPIE_TIMEZONE: 'UTC',
          ...extra,
        },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('magpie memory log / diff / undo', () => {
  it('shows a tool edit, a consolidation and a hand edit; undo restores the content before a change', async () => {
    const history = new MemoryHistory({ workspace: ws });
    const tools = new ToolRegistry([createWriteFileTool(ws, { history })]);
    await tools.execute(
      'write_file',
      JSON.stringify({ path: 'memory/MEMORY.md', content: '- Ana likes tea\n' }),
      toolContext(ws),
    );
    await writeFile(path.join(ws, 'memory', '20261125.md'), 'unused: not a dated folder\n');
    await mkdir(path.join(ws, 'memory', '202611'));
    await writeFile(path.join(ws, 'memory', '202611', '20261125.md'), '- Bruno plays go\n');
    fake.enqueue({ content: '<<<MEMORY.md\n- Ana likes tea\n- Bruno plays go\n>>>' });
    const consolidator = new Consolidator({
      history,
      provider: providerFor(fake),
      logger: silentLogger(),
      maxChars: 2_000,
    });
    expect(await consolidator.run()).toMatchObject({ status: 'applied' });
    await writeFile(
      path.join(ws, 'memory', 'MEMORY.md'),
      '- Ana likes tea\n- Bruno plays go\n- Carla sings\n',
    );

    // The hand edit is noticed by the command itself (recorded before it lists).
    const log = await magpie('log');
    expect(log).toMatchObject({ code: 0, stderr: '' });
    const lines = log.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /^[0-9a-f]{7} {2}\d{4}-\d\d-\d\d \d\d:\d\d {2}hand edit +\+1 -0 +\+ - Carla sings$/,
    );
    expect(lines[1]).toMatch(
      /^[0-9a-f]{7} {2}.{16} {2}consolidation +\+1 -0 +consolidation: 1 note\(s\), 0 conversation\(s\); \+1 -0 lines$/,
    );
    expect(lines[2]).toMatch(
      /^[0-9a-f]{7} {2}.{16} {2}write_file +\+1 -0 +first recorded version: \+ - Ana likes tea$/,
    );
    const consolidation = lines[1]!.slice(0, 7);

    const diff = await magpie('diff', consolidation);
    expect(diff.code).toBe(0);
    expect(diff.stdout).toContain(
      '--- a/MEMORY.md\n+++ b/MEMORY.md\n@@ -1 +1,2 @@\n - Ana likes tea\n+- Bruno plays go\n',
    );

    const undo = await magpie('undo', consolidation);
    expect(undo).toMatchObject({ code: 0, stderr: '' });
    expect(undo.stdout).toMatch(
      new RegExp(
        `^Undid ${consolidation}: MEMORY.md is back as it was before it \\(recorded as [0-9a-f]{7}\\)\\.\\n$`,
      ),
    );
    expect(await readFile(path.join(ws, 'memory', 'MEMORY.md'), 'utf8')).toBe('- Ana likes tea\n');
    const after = (await magpie('log')).stdout.trimEnd().split('\n');
    expect(after).toHaveLength(4);
    expect(after[0]).toMatch(new RegExp(`^[0-9a-f]{7}  .{16}  undo +\\+0 -2 +undo ${consolidation}$`));
  });

  it('refuses an unknown rev with one line and exit 2, changing nothing', async () => {
    const history = new MemoryHistory({ workspace: ws });
    await history.write('write_file', '- Ana likes tea\n');
    for (const rev of ['abcdef1', '--output=/tmp/x', 'HEAD@{1}']) {
      const out = await magpie('undo', '--', rev);
      expect(out.code).toBe(2);
      expect(out.stderr.trim().split('\n')).toHaveLength(1);
      expect(out.stderr).toContain(`unknown revision "${rev}"`);
    }
    expect(await readFile(path.join(ws, 'memory', 'MEMORY.md'), 'utf8')).toBe('- Ana likes tea\n');
    expect((await history.log()).map((e) => e.who)).toEqual(['write_file']);
  });

  it('consolidate runs it now through the budgeted provider on Redis, then skips with no model call', async () => {
    const history = new MemoryHistory({ workspace: ws });
    await history.write('write_file', '- Ana likes tea\n');
    await mkdir(path.join(ws, 'memory', '202611'), { recursive: true });
    await writeFile(path.join(ws, 'memory', '202611', '20261125.md'), '- Bruno plays go\n');
    fake.enqueue({ content: '<<<MEMORY.md\n- Ana likes tea\n- Bruno plays go\n>>>' });
    const redis = { REDIS_URL: inject('redisUrl'), MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}` };
    const start = fake.requests.length;

    const first = await magpieWith(redis, 'consolidate');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^Consolidated MEMORY.md \([0-9a-f]{7}\): \+1 -0 lines\.\n/);
    expect(first.stdout).toContain('+- Bruno plays go\n');
    expect(fake.requests.length).toBe(start + 1);
    expect(await readFile(path.join(ws, 'memory', 'MEMORY.md'), 'utf8')).toBe(
      '- Ana likes tea\n- Bruno plays go\n',
    );

    const again = await magpieWith(redis, 'consolidate');
    expect(again).toMatchObject({
      code: 0,
      stdout: 'Consolidation skipped: nothing new since the last consolidation.\n',
    });
    expect(fake.requests.length).toBe(start + 1);
  });
});
