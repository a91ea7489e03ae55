import { existsSync, readFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createExecTool, type ExecOptions, OutputCapture } from '../../../src/tools/exec.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { waitFor } from '../../fakes/wait-for.js';
import { tempDirPerTest } from '../../fakes/workspace.js';
import { toolContext } from './helpers.js';

/** True while `pid` runs; a zombie (killed, not yet reaped by init) counts as gone. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  if (!existsSync(`/proc/${pid}/stat`)) return true;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
}

describe('exec', () => {
  let ws: string;
  tempDirPerTest((dir) => {
    ws = dir;
  });

  const run = (
    command: string,
    options: ExecOptions = {},
    extra: Record<string, unknown> = {},
    signal?: AbortSignal,
  ) =>
    new ToolRegistry([createExecTool(ws, options)]).execute(
      'exec',
      JSON.stringify({ command, ...extra }),
      toolContext(ws, signal ? { signal } : {}),
    );

  it('runs in the workspace and returns stdout, stderr and the exit code', async () => {
    const result = await run('pwd; echo oops >&2');
    expect(result).toEqual({ forLLM: `${ws}\noops\n[exit code 0]` });
  });

  it('marks a non-zero exit as an error the model reads', async () => {
    const result = await run('echo failing; exit 3');
    expect(result).toEqual({ forLLM: 'failing\n[exit code 3]', isError: true });
  });

  it('disabled (auto with no working sandbox): every call says so in one line and runs nothing', async () => {
    const result = await run('touch ran.txt', { disabled: true });
    expect(result).toEqual({
      forLLM:
        'Error: exec is disabled: no sandbox could be started here (bubblewrap is missing or cannot run); the operator can install bubblewrap, or set MAGPIE_EXEC_SANDBOX=off to run commands unsandboxed',
      isError: true,
    });
    expect(existsSync(path.join(ws, 'ran.txt'))).toBe(false);
    expect(createExecTool(ws, { disabled: true }).description).toContain('Currently disabled');
  });

  it('refuses a denied command before running anything', async () => {
    const result = await run('touch ran.txt; rm -rf build');
    expect(result.isError).toBe(true);
    expect(result.forLLM).toBe(
      'Error: command refused by the safety policy (recursive forced delete (rm -rf)); destructive commands are not allowed',
    );
    expect(existsSync(path.join(ws, 'ran.txt'))).toBe(false);
  });

  it('refuses a command too long to check with what to do instead, not as a destructive one', async () => {
    const result = await run(`touch ran.txt; echo ${'a'.repeat(70 * 1024)}`);
    expect(result.isError).toBe(true);
    expect(result.forLLM).toBe(
      'Error: command refused: a command longer than 64 KiB cannot be checked; write long code to a file and run the file',
    );
    expect(existsSync(path.join(ws, 'ran.txt'))).toBe(false);
  });

  it('caps long output with a truncation marker, keeping start and end', async () => {
    const result = await run('seq 1 20000', { maxOutputChars: 1000 });
    expect(result.forLLM.startsWith('1\n2\n3\n')).toBe(true);
    expect(result.forLLM).toMatch(/\n… \[output truncated: \d+ characters omitted\] …\n/);
    expect(result.forLLM.endsWith('19999\n20000\n[exit code 0]')).toBe(true);
    expect(result.forLLM.length).toBeLessThan(1200);
  });

  it('scrubs secrets from the environment and redacts secret values from output', async () => {
    const env = {
      PATH: process.env.PATH,
      SAFE_VAR: 'visible',
      OPENAI_API_KEY: 'sk-live-abcdef',
      TELEGRAM_BOT_TOKEN: '123:tok',
      REDIS_URL: 'redis://127.0.0.1:1',
      MY_PASSWORD: 'pw',
    };
    const result = await run('env; echo the key is sk-live-abcdef', { env, secrets: ['sk-live-abcdef'] });
    expect(result.forLLM).toContain('SAFE_VAR=visible');
    expect(result.forLLM).not.toMatch(/OPENAI_API_KEY|TELEGRAM_BOT_TOKEN|REDIS_URL|MY_PASSWORD/);
    expect(result.forLLM).toContain('the key is [redacted]');
    expect(result.forLLM).not.toContain('sk-live-abcdef');
  });

  it('kills the whole process group on timeout', async () => {
    const started = Date.now();
    const result = await run('sleep 30 & echo $! > child.pid; wait', {}, { timeout_seconds: 0.5 });
    expect(result.isError).toBe(true);
    expect(result.forLLM).toMatch(/^Error: command timed out after 0\.5 s and was killed/);
    expect(Date.now() - started).toBeLessThan(10_000);
    const childPid = Number(await readFile(path.join(ws, 'child.pid'), 'utf8'));
    await waitFor(() => !alive(childPid));
  });

  it('uses SIGKILL when the group ignores SIGTERM', async () => {
    const result = await run(`trap '' TERM; sleep 30 & echo $! > child.pid; wait`, {
      timeoutMs: 400,
      killGraceMs: 200,
    });
    expect(result.forLLM).toMatch(/timed out after 0\.4 s/);
    const childPid = Number(await readFile(path.join(ws, 'child.pid'), 'utf8'));
    await waitFor(() => !alive(childPid));
  });

  it('kills the command and answers "operation cancelled by user" when the turn is aborted', async () => {
    const controller = new AbortController();
    const pending = run('echo $$ > sh.pid; sleep 30', {}, {}, controller.signal);
    const pidFile = path.join(ws, 'sh.pid');
    await waitFor(async () => existsSync(pidFile) && (await readFile(pidFile, 'utf8')).trim() !== '');
    const shPid = Number(await readFile(pidFile, 'utf8'));
    controller.abort();
    expect(await pending).toEqual({ forLLM: 'operation cancelled by user', isError: true });
    await waitFor(() => !alive(shPid));
  });

  it('returns when sh exits and kills what it left in the background', async () => {
    const started = Date.now();
    const result = await run('sleep 30 & echo $! > bg.pid; echo done');
    expect(result.forLLM).toBe('done\n[exit code 0]');
    expect(Date.now() - started).toBeLessThan(5_000);
    const bgPid = Number(await readFile(path.join(ws, 'bg.pid'), 'utf8'));
    await waitFor(() => !alive(bgPid));
  });

  it('kills background children of a command that succeeded, even ones ignoring SIGTERM', async () => {
    const result = await run(`(trap '' TERM; exec sleep 30) > /dev/null 2>&1 & echo $! > bg.pid`);
    expect(result.forLLM).toBe('(no output)\n[exit code 0]');
    const bgPid = Number(await readFile(path.join(ws, 'bg.pid'), 'utf8'));
    await waitFor(() => !alive(bgPid));
  });

  it('refuses writes outside the workspace and names of protected files without a sandbox', async () => {
    const outside = path.join(homedir(), `magpie-exec-outside-${process.pid}.txt`);
    try {
      const refused = await run(`echo x > ~/${path.basename(outside)}`);
      expect(refused.forLLM).toMatch(
        /refused by the safety policy \(writing or deleting outside the workspace\)/,
      );
      expect(existsSync(outside)).toBe(false);
    } finally {
      await rm(outside, { force: true });
    }
    const secret = await run('cat ../secret.env', {
      protectedPaths: [path.join(path.dirname(ws), 'secret.env')],
    });
    expect(secret.forLLM).toMatch(/refused by the safety policy \(reaching magpie's own files\)/);
  });
});

describe('OutputCapture', () => {
  it('returns everything when under the cap', () => {
    const capture = new OutputCapture(10);
    capture.push('abc');
    capture.push('def');
    expect(capture.text()).toBe('abcdef');
  });

  it('keeps the first and last half when over the cap', () => {
    const capture = new OutputCapture(10);
    for (const chunk of ['01234', '56789', 'abcde', 'fghij']) capture.push(chunk);
    expect(capture.text()).toBe('01234\n… [output truncated: 10 characters omitted] …\nfghij');
  });
});
