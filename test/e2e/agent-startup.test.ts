/**
 * What `magpie agent -m` loads before it answers (issue 29, start-up): with the
 * key in the environment the process re-executes without it, and the process
 * that is replaced must have loaded next to nothing (bin.js and the small
 * shed-secrets chunks: no zod, no channel registry); the process that answers
 * loads no cron-parser, no htmlparser2 and no guarded HTTP client, which only
 * the cron tool and web_fetch need. Every module file a process loads is
 * recorded by a load hook (`module.registerHooks`) preloaded with `--import`,
 * which the re-executed process keeps (execve passes execArgv on).
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { initedFolder, removeFolder } from '../fakes/workspace.js';
import { BIN, build } from './daemon-helpers.js';

const run = promisify(execFile);

let dir: string;
let workspace: string;
let fake: FakeOpenAI;

/** A preload that appends `<first|second> <file>` for every file: module the process loads. */
const RECORDER = `import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
const log = process.env.LOAD_LOG;
const which = process.env.MAGPIE_SECRET_HANDOFF === undefined ? 'first' : 'second';
registerHooks({
  load(url, context, nextLoad) {
    if (url.startsWith('file:')) appendFileSync(log, which + ' ' + url + '\\n');
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

/** The files each process loaded, and what the command printed. */
async function agentLoads(): Promise<{ stdout: string; first: string[]; second: string[] }> {
  const log = path.join(dir, `loads-${Date.now()}.txt`);
  const { stdout } = await run(
    process.execPath,
    ['--import', path.join(dir, 'recorder.mjs'), BIN, 'agent', '-m', 'hi'],
    {
      cwd: dir,
      env: {
        PATH: process.env.PATH,
        HOME: dir,
        OPENAI_API_KEY: 'sk-e2e-startup-key',
        OPENAI_BASE_URL: fake.baseURL,
        MAGPIE_WORKSPACE: workspace,
        MAGPIE_EXEC_SANDBOX: 'off',
        LOAD_LOG: log,
      },
    },
  );
  const lines = (await readFile(log, 'utf8')).trim().split('\n');
  const files = (which: string) =>
    lines
      .filter((l) => l.startsWith(`${which} `))
      .map((l) => fileURLToPath(l.slice(which.length + 1)))
      .filter((f) => !f.endsWith('recorder.mjs'));
  return { stdout, first: files('first'), second: files('second') };
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
  it('re-executes without the key before loading the command: the replaced process loads only small chunks', async () => {
    const { stdout, first, second } = await agentLoads();
    expect(stdout).toBe('ok\n');
    expect(first[0]).toBe(BIN);
    expect(second.length).toBeGreaterThan(first.length);
    let bytes = 0;
    for (const file of first) bytes += (await readFile(file)).length;
    expect(bytes, `the replaced process loaded ${first.join(', ')}`).toBeLessThan(40_000);
    expect([...(await packagesIn(first))]).toEqual([]);
    expect(first.some((f) => /[\\/]agent-[A-Z0-9]+\.js$/.test(f))).toBe(false);
  });

  it('answers without loading cron-parser, htmlparser2 or the guarded HTTP client', async () => {
    const { stdout, second } = await agentLoads();
    expect(stdout).toBe('ok\n');
    const packages = await packagesIn(second);
    // What it does need, so the markers are read right.
    expect(packages).toContain('openai');
    expect(packages).toContain('zod');
    for (const unneeded of ['cron-parser', 'luxon', 'htmlparser2', 'entities', 'ipaddr.js']) {
      expect(packages, `${unneeded} loaded`).not.toContain(unneeded);
      // cron-parser (and its luxon) are not inlined: loaded, they would come from node_modules.
      expect(
        second.filter((f) => f.includes(`${path.sep}node_modules${path.sep}${unneeded}${path.sep}`)),
      ).toEqual([]);
    }
  });
});
