/**
 * exec's sandbox end to end: the built `magpie agent` with secrets in its
 * environment and in a `.env` beside the workspace, and a fake model that
 * tries to read them in encodings no redaction matches, to kill magpie and to
 * leave a process behind — and, through the daemon, to reach its Redis on
 * loopback. Each attempt is harmless; a file written in the workspace is
 * there afterwards.
 */
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonSuite } from '../fakes/daemon.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { waitFor } from '../fakes/wait-for.js';
import { collect } from './cli-helpers.js';
import { daemonEnv, magpie } from './daemon-helpers.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = path.join(root, 'dist', 'cli', 'bin.js');
const run = promisify(execFile);

const API_KEY = `sk-e2e-${randomUUID()}`;
const TELEGRAM = `123456:${randomUUID()}`;
const DISCORD_IN_DOTENV = `dc-${randomUUID()}`;
const REDIS_PASSWORD = `pw-${randomUUID()}`;

async function hostRuns(pattern: string): Promise<boolean> {
  try {
    await run('pgrep', ['-f', pattern]);
    return true;
  } catch (err) {
    if ((err as { code?: number }).code === 1) return false;
    throw err;
  }
}

/**
 * `magpie agent -m <message>` in `dir` against `fake`, its home and state folder inside `dir`
 * (a probe success cached elsewhere cannot hide a failure), with `extra` variables.
 */
function agentIn(dir: string, fake: FakeOpenAI, message: string, extra: NodeJS.ProcessEnv) {
  return collect(
    spawn(process.execPath, [bin, 'agent', '-m', message], {
      cwd: dir,
      env: {
        PATH: process.env.PATH,
        HOME: dir,
        XDG_STATE_HOME: path.join(dir, 'state'),
        OPENAI_API_KEY: API_KEY,
        OPENAI_BASE_URL: fake.baseURL,
        MAGPIE_WORKSPACE: path.join(dir, 'workspace'),
        ...extra,
      },
    }),
  );
}

/** A temporary folder (its real path) holding a workspace made by `magpie init`, as `magpie agent` runs beside. */
async function folderWithWorkspace(prefix: string): Promise<string> {
  const dir = await realpath(await mkdtemp(path.join(tmpdir(), prefix)));
  await run(process.execPath, [bin, 'init', '--workspace', path.join(dir, 'workspace')], {
    cwd: dir,
    env: { PATH: process.env.PATH },
  });
  return dir;
}

describe('magpie agent: exec in the sandbox', () => {
  let dir: string;
  let fake: FakeOpenAI;

  beforeAll(async () => {
    dir = await folderWithWorkspace('magpie-e2e-sandbox-');
    // The default layout: .env in the folder magpie runs from, the workspace beside it.
    await writeFile(path.join(dir, '.env'), `DISCORD_BOT_TOKEN=${DISCORD_IN_DOTENV}\n`);
    fake = await startFakeOpenAI();
  });

  afterAll(async () => {
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** One `magpie agent` turn in which the model runs `commands` with exec; their results, in order. */
  async function agentRuns(commands: string[]): Promise<string[]> {
    const before = fake.requests.length;
    fake.enqueue(
      { toolCalls: commands.map((command) => ({ name: 'exec', arguments: JSON.stringify({ command }) })) },
      { content: 'All done.' },
    );
    const out = await agentIn(dir, fake, 'poke around', {
      TELEGRAM_BOT_TOKEN: TELEGRAM,
      REDIS_URL: `redis://:${REDIS_PASSWORD}@127.0.0.1:6379`,
      MAGPIE_EXEC_SANDBOX: 'bwrap',
    });
    expect(out).toMatchObject({ code: 0, stdout: 'All done.\n' });
    const results: string[] = fake.requests[before + 1]?.body.messages
      .filter((m: { role: string }) => m.role === 'tool')
      .slice(-commands.length)
      .map((m: { content: string }) => m.content);
    expect(results).toHaveLength(commands.length);
    return results;
  }

  it('keeps every secret, magpie and the host out of reach; work in the workspace goes on', async () => {
    const seconds = 316_000 + Math.floor(Math.random() * 1000);
    const commands = [
      'cat /proc/*/environ | base64 -w0',
      'cat /proc/*/environ | rev',
      'cat /proc/1/environ /proc/$PPID/environ | od -c | head -50',
      'cat ../.env | rev',
      'kill -9 $PPID; kill -9 -1; echo survived',
      `sleep ${seconds} & echo left-behind`,
      'echo made-inside > made.txt && cat made.txt',
    ];
    const results = await agentRuns(commands);
    for (const text of results) {
      expect(text).not.toMatch(/^Error: command refused/);
      const decoded = Buffer.from(text.replace(/\n\[exit code \d+\]$/, ''), 'base64').toString('latin1');
      const reversed = [...text].reverse().join('');
      for (const secret of [API_KEY, TELEGRAM, DISCORD_IN_DOTENV, REDIS_PASSWORD]) {
        for (const seen of [text, decoded, reversed]) expect(seen).not.toContain(secret);
      }
    }
    expect(results[3]).toMatch(/No such file or directory/);
    expect(results[4]).toContain('survived');
    expect(results[6]).toBe('made-inside\n[exit code 0]');
    expect(await readFile(path.join(dir, 'workspace', 'made.txt'), 'utf8')).toBe('made-inside\n');
    await waitFor(
      async () => !(await hostRuns(`sleep ${seconds}`)),
      3_000,
      'the background sleep to be gone',
    );
  });

  it('cannot write or delete outside the workspace, however the command is spelt', async () => {
    const outside = path.join(dir, 'outside');
    await mkdir(outside);
    await writeFile(path.join(outside, 'canary'), 'still here');
    const hostTmp = path.join(tmpdir(), `magpie-e2e-outside-${randomUUID()}`);
    const results = await agentRuns([
      `echo x > ${outside}/new.txt`,
      `echo x > ${hostTmp}`,
      `"rm" -r ${outside}`,
      `r''m -r ${outside}/canary`,
      `x=rm; $x -r ${outside}`,
      `sh -c "rm ${outside}/canary"`,
      `find ${outside} -delete`,
      'cp ../.env ./leaked.env',
      'touch /root/x /usr/x /etc/x',
    ]);
    expect(await readFile(path.join(outside, 'canary'), 'utf8')).toBe('still here');
    for (const gone of [path.join(outside, 'new.txt'), hostTmp]) {
      await expect(stat(gone)).rejects.toThrow(/ENOENT/);
    }
    await expect(stat(path.join(dir, 'workspace', 'leaked.env'))).rejects.toThrow(/ENOENT/);
    // Writing to /tmp succeeds, in the sandbox's own /tmp (gone with it); every other attempt fails.
    expect(results[1]).toMatch(/\[exit code 0\]$/);
    for (const text of results.filter((_, i) => i !== 1)) expect(text).not.toMatch(/\[exit code 0\]$/);
  });
});

describe('the daemon: exec in the sandbox', () => {
  const suite = daemonSuite({ killAfter: 'all' });
  const { procs, redisUrl } = suite;

  it('says at start that exec is sandboxed, and a command cannot reach Redis on loopback', async () => {
    const { port } = new URL(redisUrl);
    const redis = new Redis(redisUrl);
    const key = `e2e-sandbox-${randomUUID()}`;
    await redis.set(key, 'kept');
    const flush = `node -e "const s=require('net').connect(${port},'127.0.0.1');s.on('connect',()=>{s.write('FLUSHALL\\r\\n');console.log('CONNECTED')});s.on('error',e=>console.log('ERROR',e.code))"`;
    suite.fake.enqueue(
      {
        toolCalls: [
          { name: 'exec', arguments: JSON.stringify({ command: flush }) },
          {
            name: 'exec',
            arguments: JSON.stringify({ command: 'cat /proc/*/environ 2>/dev/null | base64 -w0' }),
          },
        ],
      },
      { content: 'tried' },
    );
    const env = daemonEnv({
      REDIS_URL: redisUrl,
      OPENAI_BASE_URL: suite.fake.baseURL,
      OPENAI_API_KEY: API_KEY,
      MAGPIE_WORKSPACE: suite.workspace,
      // What the sandbox contains, not whether a person allows it (approvals are tested on their own).
      MAGPIE_APPROVAL: 'off',
    });
    const worker = magpie(['worker'], env);
    const gateway = magpie(['gateway'], env);
    procs.push(worker, gateway);
    await worker.waitFor(/exec sandbox: bwrap \d+\.\d+(\.\d+)?, network off/);
    await Promise.all([worker.waitFor(/magpie is running/), gateway.waitFor(/magpie is running/)]);
    const send = magpie(['send', '-m', 'flush it', '--chat', 'e2e-sandbox', '--timeout', '30s'], env);
    procs.push(send);
    expect(await send.exited).toBe(0);
    expect(send.stdout().trim()).toBe('tried');
    const [toolResult, environ] = suite.fake.requests[1]!.body.messages.filter(
      (m: { role: string }) => m.role === 'tool',
    );
    expect(toolResult.content).toMatch(/^ERROR (ECONNREFUSED|ENETUNREACH)/);
    expect(environ.content).toMatch(/\[exit code 0\]$/);
    const decoded = Buffer.from(environ.content.replace(/\n\[exit code \d+\]$/, ''), 'base64').toString(
      'latin1',
    );
    expect(decoded).toContain('PATH=');
    expect(decoded).not.toContain(API_KEY);
    expect(await redis.get(key)).toBe('kept');
    await redis.del(key);
    redis.disconnect();
  });
});

/** No way to start a sandbox here: MAGPIE_EXEC_BWRAP names a bubblewrap that does not exist. */
describe('magpie agent: MAGPIE_EXEC_SANDBOX=auto without a working sandbox', () => {
  let dir: string;
  let fake: FakeOpenAI;

  beforeAll(async () => {
    dir = await folderWithWorkspace('magpie-e2e-nosandbox-');
    fake = await startFakeOpenAI();
  });

  afterAll(async () => {
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  });

  const makeAFile = (extra: NodeJS.ProcessEnv) => agentIn(dir, fake, 'make a file', extra);

  it('fails closed: exec is disabled, the model reads why, nothing runs, start-up warns once', async () => {
    fake.enqueue(
      { toolCalls: [{ name: 'exec', arguments: JSON.stringify({ command: 'echo ran > ran.txt' }) }] },
      { content: 'All done.' },
    );
    const before = fake.requests.length;
    const { code, stdout, stderr } = await makeAFile({
      MAGPIE_EXEC_SANDBOX: 'auto',
      MAGPIE_EXEC_BWRAP: path.join(dir, 'no-bwrap-here'),
    });
    expect({ code, stdout }).toEqual({ code: 0, stdout: 'All done.\n' });
    const warnings = stderr.split('\n').filter((line) => line.includes('exec is disabled'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`bwrap not found at ${path.join(dir, 'no-bwrap-here')}`);
    expect(warnings[0]).toContain('MAGPIE_EXEC_SANDBOX=off');
    const toolResults = fake.requests[before + 1]?.body.messages
      .filter((m: { role: string }) => m.role === 'tool')
      .map((m: { content: string }) => m.content);
    expect(toolResults).toEqual([
      'Error: exec is disabled: no sandbox could be started here (bubblewrap is missing or cannot run); the operator can install bubblewrap, or set MAGPIE_EXEC_SANDBOX=off to run commands unsandboxed',
    ]);
    await expect(stat(path.join(dir, 'workspace', 'ran.txt'))).rejects.toThrow(/ENOENT/);
  }, 60_000);

  it('MAGPIE_EXEC_SANDBOX=off still runs commands (on the host, knowingly)', async () => {
    fake.enqueue(
      { toolCalls: [{ name: 'exec', arguments: JSON.stringify({ command: 'echo ran > ran-off.txt' }) }] },
      { content: 'All done.' },
    );
    const { code, stderr } = await makeAFile({ MAGPIE_EXEC_SANDBOX: 'off' });
    expect(code).toBe(0);
    expect(stderr).not.toContain('exec is disabled');
    expect(await readFile(path.join(dir, 'workspace', 'ran-off.txt'), 'utf8')).toBe('ran\n');
  }, 60_000);
});
