/**
 * What `magpie agent -m` loads before it answers (issue 29, start-up): with the
 * key in the environment the process blanks it in place instead of re-executing,
 * so Node starts once (the load hook would see a re-executed process: execve
 * passes execArgv on), and a command it runs finds no key in its parent's
 * /proc environ; the process loads no cron-parser, no htmlparser2, no guarded
 * HTTP client (only the cron tool and web_fetch need them) and no marked (only
 * --voice does). Every module file the process loads is recorded by a load hook
 * (`module.registerHooks`) preloaded with `--import`.
 */
import { type ChildProcess, execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { initedFolder, removeFolder } from '../fakes/workspace.js';
import { BIN, build } from './daemon-helpers.js';

const run = promisify(execFile);
const KEY = 'sk-e2e-startup-key-7d41c9';

let dir: string;
let workspace: string;
let fake: FakeOpenAI;
/** The `magpie agent` process of the current test. */
let running: ChildProcess | undefined;

/** A preload that appends `<start> <file>` for every file: module the process loads (start: a number per Node start-up). */
const RECORDER = `import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
const log = process.env.LOAD_LOG;
const start = process.hrtime.bigint();
registerHooks({
  load(url, context, nextLoad) {
    if (url.startsWith('file:')) appendFileSync(log, start + ' ' + url + '\\n');
    return nextLoad(url, context);
  },
});
`;

beforeAll(async () => {
  build();
  ({ dir, workspace } = await initedFolder('magpie-startup-'));
  fake = await startFakeOpenAI({ responder: () => ({ content: 'ok' }) });
  await writeFile(path.join(dir, 'recorder.mjs'), RECORDER);
});

afterAll(async () => {
  await fake?.close();
  await removeFolder(dir);
});

/** What the command printed, and the files each Node start-up of it loaded (in order of start). */
async function agentLoads(model: FakeOpenAI = fake): Promise<{ stdout: string; starts: string[][] }> {
  const log = path.join(dir, `loads-${Date.now()}.txt`);
  const command = run(
    process.execPath,
    ['--import', path.join(dir, 'recorder.mjs'), BIN, 'agent', '-m', 'hi'],
    {
      cwd: dir,
      env: {
        PATH: process.env.PATH,
        HOME: dir,
        OPENAI_API_KEY: KEY,
        OPENAI_BASE_URL: model.baseURL,
        MAGPIE_WORKSPACE: workspace,
        MAGPIE_EXEC_SANDBOX: 'off',
        LOAD_LOG: log,
      },
    },
  );
  running = command.child;
  const { stdout } = await command;
  const lines = (await readFile(log, 'utf8')).trim().split('\n');
  const byStart = new Map<string, string[]>();
  for (const line of lines) {
    const [start = '', url = ''] = line.split(' ');
    const file = fileURLToPath(url);
    if (file.endsWith('recorder.mjs')) continue;
    byStart.set(start, [...(byStart.get(start) ?? []), file]);
  }
  const starts = [...byStart.entries()]
    .sort(([a], [b]) => (BigInt(a) < BigInt(b) ? -1 : 1))
    .map(([, f]) => f);
  return { stdout, starts };
}

/** The packages esbuild inlined into a bundle file (its `// node_modules/<package>/` markers). */
async function packagesIn(files: string[]): Promise<Set<string>> {
  const found = new Set<string>();
  for (const file of files) {
    const text = await readFile(file, 'utf8');
    for (const m of text.matchAll(/^\/\/ node_modules\/((?:@[^/]+\/)?[^/]+)\//gm)) found.add(m[1]!);
  }
  return found;
}

describe('magpie agent -m start-up', () => {
  it('sheds the key in place: Node starts once, bin.js loads once', async () => {
    const { stdout, starts } = await agentLoads();
    expect(stdout).toBe('ok\n');
    expect(starts).toHaveLength(1);
    const [files = []] = starts;
    expect(files[0]).toBe(BIN);
    expect(files.filter((f) => f === BIN)).toHaveLength(1);
  });

  it('while it waits for the model, another process of the user finds no key in its /proc environ', async () => {
    let environ = '';
    const model = await startFakeOpenAI({
      responder: () => {
        // The request is in flight: the agent process is alive and past its start-up.
        environ = readFileSync(`/proc/${running?.pid}/environ`, 'latin1');
        return { content: 'ok' };
      },
    });
    try {
      const { stdout, starts } = await agentLoads(model);
      expect(stdout).toBe('ok\n');
      expect(starts).toHaveLength(1);
    } finally {
      await model.close();
    }
    expect(environ).toContain(`MAGPIE_WORKSPACE=${workspace}\0`);
    expect(environ).toContain('OPENAI_API_KEY=\0');
    expect(environ).not.toContain(KEY);
  });

  it('answers without loading cron-parser, htmlparser2, marked or the guarded HTTP client', async () => {
    const { stdout, starts } = await agentLoads();
    expect(stdout).toBe('ok\n');
    const packages = await packagesIn(starts.flat());
    // What it does need, so the markers are read right.
    expect(packages).toContain('openai');
    expect(packages).toContain('zod');
    for (const unneeded of ['cron-parser', 'luxon', 'htmlparser2', 'entities', 'ipaddr.js', 'marked']) {
      expect(packages, `${unneeded} loaded`).not.toContain(unneeded);
      // cron-parser (and its luxon) are not inlined: loaded, they would come from node_modules.
      expect(
        starts.flat().filter((f) => f.includes(`${path.sep}node_modules${path.sep}${unneeded}${path.sep}`)),
      ).toEqual([]);
    }
  });
});
