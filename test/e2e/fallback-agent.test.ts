/**
 * Fallbacks and /model through the built `magpie agent`: a refused primary is
 * answered by the fallback within seconds (exit 0); everything down is exit 3
 * with one line naming each model, its endpoint and its failure (no key); a
 * chat's /model choice survives to the next run and applies to that chat only;
 * an unknown name is refused; a malformed MAGPIE_FALLBACK_MODELS is exit 2.
 */
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../fakes/openai-server.js';
import { initedFolder, removeFolder } from '../fakes/workspace.js';
import { closedPort, collect, type Outcome as Printed, said } from './cli-helpers.js';

interface Outcome extends Printed {
  ms: number;
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = path.join(root, 'dist', 'cli', 'bin.js');
const exec = promisify(execFile);
const KEY = 'sk-e2e-fallback-key-31337';

let dir: string;
let workspace: string;
let main: FakeOpenAI;
let backup: FakeOpenAI;

function agent(args: string[], env: Record<string, string>): Promise<Outcome> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, 'agent', ...args], {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: dir, OPENAI_API_KEY: KEY, MAGPIE_WORKSPACE: workspace, ...env },
    });
    collect(child).then((o) => resolve({ ...o, ms: Date.now() - started }), reject);
    child.stdin.end();
  });
}

beforeAll(async () => {
  await exec('npm', ['run', 'build', '--silent'], { cwd: root, timeout: 120_000 });
  ({ dir, workspace } = await initedFolder('magpie-fallback-e2e-'));
}, 150_000);

afterAll(() => removeFolder(dir));

beforeEach(async () => {
  [main, backup] = await Promise.all([startFakeOpenAI(), startFakeOpenAI()]);
  main.setResponder((req) => ({ content: `main: ${lastUserText(req)}` }));
  backup.setResponder((req) => ({ content: `backup: ${lastUserText(req)}` }));
});
afterEach(async () => {
  await Promise.all([main.close(), backup.close()]);
});

function models(primary: string): Record<string, string> {
  return {
    OPENAI_BASE_URL: primary,
    MAGPIE_MODEL: 'main-model',
    MAGPIE_FALLBACK_MODELS: `backup-model@${backup.baseURL}`,
  };
}

describe('magpie agent with fallbacks', () => {
  it('is answered by the fallback within seconds when the primary refuses connections', async () => {
    const dead = `http://127.0.0.1:${await closedPort()}/v1`;
    const out = await agent(['--chat', 'refused', '-m', 'hello'], models(dead));
    expect(out.stdout).toBe('backup: hello\n');
    expect(out.code).toBe(0);
    expect(out.ms).toBeLessThan(8_000);
    expect(backup.requests[0]?.headers.authorization).toBeUndefined();
  }, 30_000);

  it('exits 3 with one line naming each model, its endpoint and its failure when all are down', async () => {
    const dead = `http://127.0.0.1:${await closedPort()}/v1`;
    backup.setResponder(() => ({ status: 503, error: { message: `overloaded (${KEY})` } }));
    const out = await agent(['--chat', 'down', '-m', 'hello'], {
      ...models(dead),
      MAGPIE_LLM_MAX_RETRIES: '0',
    });
    expect(out.code).toBe(3);
    expect(out.stdout).toBe('');
    const lines = said(out.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^magpie: all 2 models failed: main-model at ${dead.replace(/[./]/g, '\\$&')}: cannot reach .*ECONNREFUSED.*; backup-model at ${backup.baseURL.replace(/[./]/g, '\\$&')}: the model endpoint failed \\(503\\)`,
      ),
    );
    expect(out.stderr).not.toContain(KEY);
  }, 30_000);

  it('keeps a chat’s /model for the next run, for that chat only, and refuses an unknown name', async () => {
    const env = models(main.baseURL);
    const picked = await agent(['--chat', 'picky', '-m', '/model backup-model'], env);
    expect(picked).toMatchObject({
      code: 0,
      stdout: 'This chat now uses backup-model (the others step in if it fails).\n',
    });
    expect((await agent(['--chat', 'picky', '-m', 'hi'], env)).stdout).toBe('backup: hi\n');
    expect((await agent(['--chat', 'other', '-m', 'hi'], env)).stdout).toBe('main: hi\n');
    const unknown = await agent(['--chat', 'picky', '-m', '/model gpt-nope'], env);
    expect(unknown.stdout).toBe(
      'There is no model "gpt-nope" here. Choose one of: main-model, backup-model (or default).\n',
    );
    expect((await agent(['--chat', 'picky', '-m', 'still?'], env)).stdout).toBe('backup: still?\n');
    const list = await agent(['--chat', 'picky', '-m', '/model'], env);
    expect(list.stdout).toContain('2. backup-model (← this chat)');
  }, 60_000);

  it('refuses a malformed MAGPIE_FALLBACK_MODELS with one line, exit 2', async () => {
    const out = await agent(['-m', 'hi'], {
      ...models(main.baseURL),
      MAGPIE_FALLBACK_MODELS: 'llama3.1@127.0.0.1:11434/v1',
    });
    expect(out.code).toBe(2);
    expect(said(out.stderr)).toEqual([
      'magpie: MAGPIE_FALLBACK_MODELS entry "llama3.1@127.0.0.1:11434/v1": after @ comes the endpoint URL with http:// or https://, e.g. http://127.0.0.1:11434/v1: fix it in .env (see .env.example)',
    ]);
    expect(main.requests).toHaveLength(0);
  }, 30_000);
});
