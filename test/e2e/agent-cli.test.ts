/**
 * `magpie agent` end to end: the built CLI as a subprocess against the fake
 * OpenAI server, with a workspace made by `magpie init`. Covers the happy path
 * (a tool call that writes a file) and the bad-input cases of issue 2.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI, withoutContextBlock } from '../fakes/openai-server.js';
import { initedFolder, removeFolder } from '../fakes/workspace.js';
import { closedPort, collect, type Outcome, said } from './cli-helpers.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = path.join(root, 'dist', 'cli', 'bin.js');
const exec = promisify(execFile);

let dir: string;
let workspace: string;
let fake: FakeOpenAI;

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: dir,
    OPENAI_API_KEY: 'test-key',
    OPENAI_BASE_URL: fake.baseURL,
    MAGPIE_WORKSPACE: workspace,
    ...extra,
  };
}

/** Runs `magpie agent <args>` in the temp folder (no .env there) and collects its output. */
function agent(args: string[], extraEnv: Record<string, string> = {}, input?: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, 'agent', ...args], { cwd: dir, env: env(extraEnv) });
    collect(child).then(resolve, reject);
    child.stdin.end(input ?? '');
  });
}

beforeAll(async () => {
  await exec('npm', ['run', 'build', '--silent'], { cwd: root, timeout: 120_000 });
  ({ dir, workspace } = await initedFolder('magpie-agent-e2e-'));
}, 150_000);

afterAll(() => removeFolder(dir));

afterEach(async () => {
  await fake?.close();
});

describe('magpie agent', () => {
  it('runs a turn where the model writes a file through write_file, then prints the answer', async () => {
    fake = await startFakeOpenAI();
    fake.enqueue(
      {
        toolCalls: [
          { name: 'write_file', arguments: JSON.stringify({ path: 'notes/cat.txt', content: 'Miso' }) },
        ],
      },
      { content: 'I noted that your cat is called Miso.' },
    );
    const out = await agent(['-m', 'remember that my cat is called Miso']);
    expect(out).toMatchObject({ code: 0, stdout: 'I noted that your cat is called Miso.\n' });
    expect(await readFile(path.join(workspace, 'notes', 'cat.txt'), 'utf8')).toBe('Miso');
    expect(fake.requests).toHaveLength(2);
    const toolResult = fake.requests[1]!.body.messages.findLast((m: { role: string }) => m.role === 'tool');
    expect(toolResult.content).not.toMatch(/^Error/);
    expect(fake.requests[0]!.body.messages[0].content).toContain('AGENTS.md');
  });

  it('keeps the conversation in cli:<chat> and honours --workspace', async () => {
    fake = await startFakeOpenAI({ responder: () => ({ content: 'noted' }) });
    const other = path.join(dir, 'other-ws');
    await exec(process.execPath, [bin, 'init', '--workspace', other], {
      cwd: dir,
      env: { PATH: process.env.PATH },
    });
    await agent(['--chat', 'work', '--workspace', other, '-m', 'first']);
    const out = await agent(['--chat', 'work', '--workspace', other, '-m', 'second']);
    expect(out.code).toBe(0);
    const second = fake.requests[1]!.body.messages.filter((m: { role: string }) => m.role === 'user');
    // Each message as the user wrote it, before the context block magpie ends it with.
    expect(second.map((m: { content: string }) => withoutContextBlock(m.content))).toEqual([
      'first',
      'second',
    ]);
    expect(await readdir(path.join(other, 'sessions'))).toContain('cli_work.jsonl');
  });

  it('answers lines from stdin in interactive mode and quits at end of input', async () => {
    fake = await startFakeOpenAI({ responder: (_req, i) => ({ content: `answer ${i + 1}` }) });
    const out = await agent(['--chat', 'repl'], {}, 'hello\n/help\nbye\n');
    expect(out.code).toBe(0);
    expect(out.stdout).toContain('answer 1');
    expect(out.stdout).toContain('/new');
    expect(out.stdout).toContain('answer 2');
    expect(fake.requests).toHaveLength(2);
  });

  it('exits 130 when Ctrl-C cancels the running turn', async () => {
    fake = await startFakeOpenAI({ responder: () => ({ content: 'too late', delayMs: 20_000 }) });
    const child = spawn(process.execPath, [bin, 'agent', '-m', 'slow please'], { cwd: dir, env: env() });
    const done = collect(child);
    await fake.waitForRequests(1, 20_000);
    child.kill('SIGINT');
    const out = await done;
    expect(out.code).toBe(130);
    expect(out.stdout).toBe('');
  });

  it('feeds garbage tool arguments back to the model as an error, and the turn still answers', async () => {
    fake = await startFakeOpenAI();
    fake.enqueue(
      { toolCalls: [{ name: 'write_file', arguments: '{"path": "x.txt", "content' }] },
      { content: 'Recovered.' },
    );
    const out = await agent(['--chat', 'garbage', '-m', 'write something']);
    expect(out).toMatchObject({ code: 0, stdout: 'Recovered.\n' });
    const toolResult = fake.requests[1]!.body.messages.findLast((m: { role: string }) => m.role === 'tool');
    expect(toolResult.content).toMatch(/not valid JSON/);
    expect(existsSync(path.join(workspace, 'x.txt'))).toBe(false);
  });
});

describe('magpie agent: bad input gets one line and a defined exit code', () => {
  it('no API key → exit 2', async () => {
    fake = await startFakeOpenAI();
    const out = await agent(['-m', 'hi'], { OPENAI_API_KEY: '' });
    expect(out.code).toBe(2);
    expect(out.stdout).toBe('');
    expect(said(out.stderr)).toHaveLength(1);
    expect(out.stderr).toContain('OPENAI_API_KEY');
    expect(fake.requests).toHaveLength(0);
  });

  it('unreachable endpoint → exit 3', async () => {
    fake = await startFakeOpenAI();
    const port = await closedPort();
    const out = await agent(['-m', 'hi'], {
      OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`,
      MAGPIE_LLM_MAX_RETRIES: '0',
    });
    expect(out.code).toBe(3);
    expect(said(out.stderr)).toHaveLength(1);
    expect(out.stderr).toContain('OPENAI_BASE_URL');
  });

  it('401 → exit 3 naming OPENAI_API_KEY, not retried', async () => {
    fake = await startFakeOpenAI({ apiKey: 'the-right-key' });
    const out = await agent(['-m', 'hi'], { OPENAI_API_KEY: 'a-wrong-key' });
    expect(out.code).toBe(3);
    expect(said(out.stderr)).toHaveLength(1);
    expect(out.stderr).toContain('OPENAI_API_KEY');
    expect(out.stderr).not.toContain('a-wrong-key');
    expect(fake.requests).toHaveLength(1);
  });

  it('a 500 storm → exit 3 after the retries', async () => {
    fake = await startFakeOpenAI({ responder: () => ({ status: 500, error: { message: 'boom' } }) });
    const out = await agent(['-m', 'hi'], { MAGPIE_LLM_MAX_RETRIES: '1' });
    expect(out.code).toBe(3);
    expect(said(out.stderr)).toHaveLength(1);
    expect(fake.requests).toHaveLength(2);
  });

  it('missing workspace → exit 2 pointing at magpie init', async () => {
    fake = await startFakeOpenAI();
    const out = await agent(['-m', 'hi', '--workspace', path.join(dir, 'nope')]);
    expect(out.code).toBe(2);
    expect(said(out.stderr)).toHaveLength(1);
    expect(out.stderr).toContain('magpie init');
    expect(fake.requests).toHaveLength(0);
  });

  it('an unknown flag → exit 2; --help → exit 0', async () => {
    fake = await startFakeOpenAI();
    const bad = await agent(['--bogus']);
    expect(bad.code).toBe(2);
    expect(said(bad.stderr)).toHaveLength(1);
    const help = await agent(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--chat ID');
  });
});

describe('magpie agent: bad input from the model and the configuration (issue 11)', () => {
  const usageOnly =
    `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [], usage: { prompt_tokens: 3, completion_tokens: 0, total_tokens: 3 } })}\n\n` +
    'data: [DONE]\n\n';

  it('an SSE stream with no choices → one line, exit 1, no invented reply', async () => {
    fake = await startFakeOpenAI({ responder: () => ({ raw: usageOnly }) });
    const out = await agent(['--chat', 'choiceless', '-m', 'hi'], { MAGPIE_LLM_MAX_RETRIES: '0' });
    expect(out.code).toBe(1);
    expect(out.stdout).toBe('');
    expect(said(out.stderr)).toEqual([
      'magpie: the model sent an empty answer (the completion carried no choices)',
    ]);
  });

  it('empty content with no tool calls → retried, then one line and exit 1', async () => {
    fake = await startFakeOpenAI({ responder: () => ({ content: '' }) });
    const out = await agent(['--chat', 'empty', '-m', 'hi'], { MAGPIE_LLM_MAX_RETRIES: '1' });
    expect(out.code).toBe(1);
    expect(out.stdout).toBe('');
    expect(said(out.stderr)).toEqual([
      'magpie: the model sent an empty answer (no text and no tool calls, finish_reason stop)',
    ]);
    expect(out.stderr).not.toContain('nothing more to add');
    expect(fake.requests).toHaveLength(2);
  });

  it('a turn stopped at the step limit prints its reply and exits 1', async () => {
    fake = await startFakeOpenAI({
      responder: () => ({ toolCalls: [{ name: 'list_dir', arguments: '{"path":"."}' }] }),
    });
    const out = await agent(['--chat', 'steps', '-m', 'loop'], { MAGPIE_MAX_ITERATIONS: '1' });
    expect(out.code).toBe(1);
    expect(out.stdout).toContain('I stopped after 1 steps without finishing');
  });

  it('a 10 MB tool-call argument is refused, and the next turn in the same chat succeeds with a small request', async () => {
    fake = await startFakeOpenAI();
    fake.enqueue(
      {
        toolCalls: [
          {
            name: 'write_file',
            arguments: JSON.stringify({ path: 'big.txt', content: 'x'.repeat(10 * 1024 * 1024) }),
          },
        ],
      },
      { content: 'That was too big to write.' },
      { content: 'Hello again.' },
    );
    const first = await agent(['--chat', 'huge', '-m', 'write a big file']);
    expect(first).toMatchObject({ code: 0, stdout: 'That was too big to write.\n' });
    expect(existsSync(path.join(workspace, 'big.txt'))).toBe(false);
    const refusal = fake.requests[1]!.body.messages.findLast((m: { role: string }) => m.role === 'tool');
    expect(refusal.content).toMatch(
      /^Error: the arguments of this call are \d+ bytes, over the limit of 262144 bytes/,
    );
    const second = await agent(['--chat', 'huge', '-m', 'hello']);
    expect(second).toMatchObject({ code: 0, stdout: 'Hello again.\n' });
    expect(JSON.stringify(fake.requests[2]!.body).length).toBeLessThan(100_000);
  }, 60_000);

  it('MAGPIE_EXEC_TIMEOUT=999999h → exit 2 with one line naming the variable', async () => {
    fake = await startFakeOpenAI();
    const out = await agent(['-m', 'hi'], { MAGPIE_EXEC_TIMEOUT: '999999h' });
    expect(out.code).toBe(2);
    expect(said(out.stderr)).toEqual([
      'magpie: MAGPIE_EXEC_TIMEOUT "999999h" is too long; at most 24h: fix it in .env (see .env.example)',
    ]);
    expect(fake.requests).toHaveLength(0);
  });

  it('REDIS_URL=http://… → exit 2 with one line naming the variable, without its password', async () => {
    fake = await startFakeOpenAI();
    const out = await agent(['-m', 'hi'], { REDIS_URL: 'http://:hunter2-pw@127.0.0.1:6379' });
    expect(out.code).toBe(2);
    expect(said(out.stderr)).toHaveLength(1);
    expect(out.stderr).toContain('REDIS_URL must start with redis:// or rediss://');
    expect(out.stderr).not.toContain('hunter2-pw');
  });

  it('credentials in OPENAI_BASE_URL never reach stderr: a key parameter (unreachable) or user info (refused)', async () => {
    fake = await startFakeOpenAI();
    const port = await closedPort();
    const withKey = await agent(['-m', 'hi'], {
      OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1?api_key=key-in-url-4242`,
      MAGPIE_LLM_MAX_RETRIES: '1',
      LOG_LEVEL: 'debug',
    });
    expect(withKey.code).toBe(3);
    expect(said(withKey.stderr)).toHaveLength(1);
    expect(withKey.stderr).toContain(`http://127.0.0.1:${port}/v1?api_key=[redacted]`);
    expect(withKey.stderr).not.toContain('key-in-url-4242');
    const withUser = await agent(['-m', 'hi'], {
      OPENAI_BASE_URL: `http://alice:pass-in-url-4242@127.0.0.1:${port}/v1`,
    });
    expect(withUser.code).toBe(2);
    expect(said(withUser.stderr)).toHaveLength(1);
    expect(withUser.stderr).toContain('OPENAI_BASE_URL holds a user name or password');
    expect(withUser.stderr).not.toContain('pass-in-url-4242');
  });
});
