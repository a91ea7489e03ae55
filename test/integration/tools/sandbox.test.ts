/**
 * exec in a real bubblewrap sandbox (npm test installs bubblewrap), tried as
 * a hostile message would: secrets in any encoding, `.env` beside the
 * workspace, writes and deletes outside, killing magpie, background children,
 * Redis on loopback, a fork bomb, a runaway write, /etc/shadow — each refused
 * or harmless — with positive controls showing that exec still works.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { AppError, ConfigError, ExitCode } from '../../../src/errors/index.js';
import { execSandboxCheck } from '../../../src/ops/doctor-sandbox.js';
import { createExecTool, type ExecOptions } from '../../../src/tools/exec.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { type BwrapSandbox, type BwrapSandboxOptions, resolveSandbox } from '../../../src/tools/sandbox.js';
import type { ToolResult } from '../../../src/tools/types.js';
import { type RedisHandle, startRedis } from '../../fakes/redis-server.js';
import { waitFor } from '../../fakes/wait-for.js';
import { toolContext } from '../../unit/tools/helpers.js';

const run = promisify(execFile);

const SECRETS = {
  OPENAI_API_KEY: `sk-sandbox-${randomUUID()}`,
  TELEGRAM_BOT_TOKEN: `123456:tg-${randomUUID()}`,
  DISCORD_BOT_TOKEN: `dc-${randomUUID()}`,
  REDIS_URL: `redis://:pw-${randomUUID()}@127.0.0.1:6379`,
};
const REDIS_PASSWORD = new URL(SECRETS.REDIS_URL).password;

/** A sandbox made for one test layout: `<root>/.env`, `<root>/workspace`, `<root>/state`. */
async function sandboxFor(
  workspace: string,
  options: Partial<BwrapSandboxOptions> = {},
): Promise<BwrapSandbox> {
  const status = await resolveSandbox('bwrap', { workspace, ...options });
  if (status.kind !== 'bwrap') throw new AppError('INTERNAL', 'bwrap mode resolved to no sandbox');
  return status.sandbox;
}

/** True while a host process runs `pattern` (pgrep -f). */
async function hostRuns(pattern: string): Promise<boolean> {
  try {
    await run('pgrep', ['-f', pattern]);
    return true;
  } catch (err) {
    if ((err as { code?: number }).code === 1) return false; // pgrep: nothing matched
    throw err;
  }
}

describe('exec in a bubblewrap sandbox', () => {
  let root: string;
  let ws: string;
  let stateDir: string;
  let sandbox: BwrapSandbox;
  const saved: Record<string, string | undefined> = {};

  beforeAll(async () => {
    // magpie's own environment carries the secrets, as in production.
    for (const [name, value] of Object.entries(SECRETS)) {
      saved[name] = process.env[name];
      process.env[name] = value;
    }
    root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'magpie-sandbox-')));
    ws = path.join(root, 'workspace');
    stateDir = path.join(root, 'state');
    await mkdir(path.join(ws, 'sessions'), { recursive: true });
    await mkdir(path.join(stateDir, 'redis'), { recursive: true });
    await writeFile(path.join(root, '.env'), `OPENAI_API_KEY=${SECRETS.OPENAI_API_KEY}\n`);
    await writeFile(path.join(stateDir, 'redis', 'password'), REDIS_PASSWORD);
    await writeFile(path.join(ws, 'sessions', 'cli_test.jsonl'), '{"role":"user","content":"hi"}\n');
    await mkdir(path.join(ws, '.redis'));
    await writeFile(path.join(ws, '.redis', 'appendonly.aof'), 'legacy data');
    sandbox = await sandboxFor(ws, {
      hidden: [path.join(ws, '.redis'), stateDir, path.join(root, '.env')],
      limits: { processes: 64, fileSizeBytes: 1024 * 1024 },
    });
  });

  afterAll(async () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await rm(root, { recursive: true, force: true });
  });

  /** Runs one command through the exec tool, with no secret redaction (leaks must not happen at all). */
  const exec = (command: string, timeoutSeconds?: number, options: ExecOptions = {}): Promise<ToolResult> =>
    new ToolRegistry([createExecTool(ws, { sandbox, ...options })]).execute(
      'exec',
      JSON.stringify({ command, ...(timeoutSeconds ? { timeout_seconds: timeoutSeconds } : {}) }),
      toolContext(ws),
    );

  const expectNoSecret = (text: string) => {
    const reversed = [...text].reverse().join('');
    for (const secret of [...Object.values(SECRETS), REDIS_PASSWORD]) {
      for (const seen of [text, reversed, Buffer.from(text, 'base64').toString('latin1')]) {
        expect(seen).not.toContain(secret);
      }
    }
  };

  it('runs sh, coreutils, node, python3 and git, and writes files the host sees', async () => {
    const result = await exec(
      'echo made > made.txt && node -e "console.log(6*7)" && python3 -c "print(2**10)" && git init -q repo && git -C repo status --short && wc -c < made.txt && pwd',
    );
    expect(result.forLLM).toBe(`42\n1024\n5\n${ws}\n[exit code 0]`);
    expect(await readFile(path.join(ws, 'made.txt'), 'utf8')).toBe('made\n');
    expect(existsSync(path.join(ws, 'repo', '.git'))).toBe(true);
  });

  it("shows no secret of magpie's environment, in any encoding", async () => {
    const commands = [
      'cat /proc/*/environ',
      'cat /proc/*/environ | base64 -w0',
      'cat /proc/*/environ | rev',
      'cat /proc/$PPID/environ | base64 -w0',
      'env | rev',
      'node -e "console.log(JSON.stringify(process.env))"',
    ];
    for (const command of commands) {
      const result = await exec(command);
      // As root, the sandbox's pid 1 (bwrap, root's) is not readable to the command (nobody).
      expect(result.forLLM).toMatch(process.getuid?.() === 0 ? /\[exit code [01]\]$/ : /\[exit code 0\]$/);
      expectNoSecret(result.forLLM);
    }
    const env = await exec('env | sort');
    expect(env.forLLM).toBe(
      `HOME=${ws}\nLANG=${process.env.LANG && /^[\w.@+/:-]+$/.test(process.env.LANG) ? process.env.LANG : 'C.UTF-8'}\nPATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin\nPWD=${ws}\nTERM=dumb\nTZ=UTC\n[exit code 0]`,
    );
  });

  it('cannot read the .env beside the workspace, the state folder, /etc/shadow or home folders', async () => {
    const result = await exec(
      `cat ../.env | rev; ls ${stateDir}; cat ${stateDir}/redis/password; cat /etc/shadow /etc/gshadow; ls /etc/ssl/private /root /home; ls .redis`,
    );
    expect(result.forLLM).toMatch(/cat: \.\.\/\.env: No such file or directory/);
    expect(result.forLLM).toMatch(/cat: \/etc\/shadow: No such file or directory/);
    expect(result.forLLM).toMatch(/ls: cannot access '\/root': No such file or directory/);
    expect(result.forLLM).not.toContain('appendonly.aof');
    expectNoSecret(result.forLLM);
    const etc = await exec('ls /etc /etc/ssh');
    expect(etc.forLLM).toContain('passwd');
    expect(etc.forLLM).not.toMatch(/shadow|ssh_host_|sudoers|npmrc|pip\.conf|gitconfig/);
  });

  it('keeps sessions/ and the system read-only, and /tmp private', async () => {
    const marker = `magpie-sandbox-${randomUUID()}`;
    const result = await exec(
      `echo forged > sessions/cli_test.jsonl; echo x > /tmp/${marker}; touch /usr/${marker} /etc/${marker} /${marker}; ls /tmp`,
    );
    expect(result.forLLM).toMatch(/sessions\/cli_test\.jsonl: Read-only file system/);
    expect(result.forLLM).toMatch(new RegExp(`touch: cannot touch '/usr/${marker}': Read-only file system`));
    expect(result.forLLM).toContain(marker); // inside, /tmp holds it…
    expect(existsSync(path.join(os.tmpdir(), marker))).toBe(false); // …the host's does not
    expect(existsSync(`/usr/${marker}`)).toBe(false);
    expect(await readFile(path.join(ws, 'sessions', 'cli_test.jsonl'), 'utf8')).toContain('"hi"');
    const later = await exec(`ls /tmp/${marker}`);
    expect(later.forLLM).toMatch(/No such file or directory/);
  });

  it('leaves files outside the workspace alone, however the delete is spelled', async () => {
    // Root: a folder in /usr (mounted read-only); anyone else: one in the home folder (not mounted).
    const base = process.getuid?.() === 0 ? '/usr/local/share' : os.homedir();
    const outside = path.join(base, `magpie-sandbox-${randomUUID()}`);
    await mkdir(outside, { recursive: true });
    await writeFile(path.join(outside, 'keep.txt'), 'keep');
    try {
      for (const command of [
        `r''m -rf ${outside}`,
        `"rm" -rf ${outside}`,
        `\\rm -rf ${outside}`,
        `x=rm; $x -rf ${outside}`,
        `sh -c "rm -rf ${outside}"`,
        `find ${outside} -delete`,
        `printf 'rm -rf %s; rm -f %s/keep.txt; echo x > %s/keep.txt\\n' ${outside} ${outside} ${outside} > del.sh; sh del.sh`,
        `echo cm0gLXJmICR0YXJnZXQK | base64 -d > del2.sh; target=${outside} sh del2.sh`,
        `touch /root/x ${outside}/new.txt`,
      ]) {
        await exec(command);
        expect(await readFile(path.join(outside, 'keep.txt'), 'utf8')).toBe('keep');
      }
      expect(existsSync(path.join(outside, 'new.txt'))).toBe(false);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('survives kill -9 $PPID and kill -9 -1; the test process lives on', async () => {
    const result = await exec('kill -9 $PPID; echo after-ppid; kill -9 -1; echo unreachable');
    expect(result.forLLM).toContain('after-ppid');
    expect(() => process.kill(process.pid, 0)).not.toThrow();
    expect((await exec('echo still-working')).forLLM).toBe('still-working\n[exit code 0]');
  });

  it('leaves nothing running after the command returns', async () => {
    const seconds = 317_000 + Math.floor(Math.random() * 1000);
    const result = await exec(
      `sleep ${seconds} & nohup setsid sleep ${seconds + 1} > /dev/null 2>&1 & echo started`,
    );
    expect(result.forLLM).toBe('started\n[exit code 0]');
    await waitFor(
      async () => !(await hostRuns(`sleep ${seconds}`)) && !(await hostRuns(`sleep ${seconds + 1}`)),
      3_000,
    );
  });

  it('kills everything when the command times out', async () => {
    const seconds = 318_000 + Math.floor(Math.random() * 1000);
    const started = Date.now();
    const result = await exec(`sleep ${seconds} & sleep ${seconds + 1}`, 0.5);
    expect(result.forLLM).toMatch(/^Error: command timed out after 0\.5 s and was killed/);
    expect(Date.now() - started).toBeLessThan(5_000);
    await waitFor(async () => !(await hostRuns(`sleep ${seconds}`)), 3_000);
  });

  it('kills everything when the turn is cancelled', async () => {
    const seconds = 319_000 + Math.floor(Math.random() * 1000);
    const controller = new AbortController();
    const pending = new ToolRegistry([createExecTool(ws, { sandbox })]).execute(
      'exec',
      JSON.stringify({ command: `sleep ${seconds} & touch started; sleep ${seconds + 1}` }),
      toolContext(ws, { signal: controller.signal }),
    );
    await waitFor(() => existsSync(path.join(ws, 'started')), 5_000);
    expect(await hostRuns(`sleep ${seconds}`)).toBe(true);
    controller.abort();
    expect(await pending).toEqual({ forLLM: 'operation cancelled by user', isError: true });
    await waitFor(
      async () => !(await hostRuns(`sleep ${seconds}`)) && !(await hostRuns(`sleep ${seconds + 1}`)),
      3_000,
    );
  });

  it('stops a fork bomb at the process limit; the host and the next command are fine', async () => {
    // Hidden in base64 so the deny list cannot see it: the sandbox's limit must hold on its own.
    const bomb = Buffer.from('f(){ f|f& }; f\n').toString('base64');
    // 6 s: on a loaded machine the bomb needs a while to reach the limit and print fork's refusal.
    const pending = exec(`echo ${bomb} | base64 -d > bomb.sh; touch forking; sh bomb.sh; sleep 30`, 6);
    // While it runs, the host still starts processes.
    await waitFor(() => existsSync(path.join(ws, 'forking')), 5_000);
    expect((await run('/bin/echo', ['host-ok'])).stdout).toBe('host-ok\n');
    const result = await pending;
    // Killed at the time limit, or ended sooner when the limit left its own shell unable to start
    // `sleep`: either way the bomb met the process limit.
    expect(result.forLLM).toMatch(
      /^Error: command timed out after 6 s and was killed|\[exit code [1-9]\d*\]/,
    );
    expect(result.forLLM).toMatch(/Cannot fork|Resource temporarily unavailable/);
    expect((await exec('echo next')).forLLM).toBe('next\n[exit code 0]');
  });

  it('stops a runaway write at the file-size limit', async () => {
    const result = await exec('yes > runaway.txt; echo exit=$?');
    expect(result.forLLM).toMatch(/File size limit exceeded/);
    expect((await stat(path.join(ws, 'runaway.txt'))).size).toBe(1024 * 1024);
  });
});

describe('exec sandbox and Redis on loopback', () => {
  let redis: RedisHandle;
  let root: string;
  let ws: string;
  const password = `pw-${randomUUID()}`;
  const probe = (port: number) =>
    `node -e "const s=require('net').connect(${port},'127.0.0.1');s.on('connect',()=>s.write('PING\\r\\nFLUSHALL\\r\\n'));s.on('data',d=>{console.log('REPLY',String(d).trim());process.exit(0)});s.on('error',e=>{console.log('ERROR',e.code);process.exit(3)})"`;

  beforeAll(async () => {
    redis = await startRedis();
    const admin = new Redis(redis.url);
    await admin.set('magpie:keep', 'queued');
    await admin.config('SET', 'requirepass', password);
    admin.disconnect();
    root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'magpie-sandbox-net-')));
    ws = path.join(root, 'workspace');
    await mkdir(path.join(root, 'state', 'redis'), { recursive: true });
    await mkdir(ws);
    await writeFile(path.join(root, 'state', 'redis', 'password'), password);
  });

  afterAll(async () => {
    await redis.stop();
    await rm(root, { recursive: true, force: true });
  });

  const exec = async (network: boolean, command: string) => {
    const sandbox = await sandboxFor(ws, { network });
    return new ToolRegistry([createExecTool(ws, { sandbox })]).execute(
      'exec',
      JSON.stringify({ command }),
      toolContext(ws),
    );
  };

  it('cannot reach Redis with the network off', async () => {
    const result = await exec(false, probe(redis.port));
    expect(result.forLLM).toMatch(/^ERROR (ECONNREFUSED|ENETUNREACH)/);
  });

  it('with the network on reaches Redis, which refuses it without the password it cannot read', async () => {
    const result = await exec(true, `${probe(redis.port)}; cat ${root}/state/redis/password`);
    expect(result.forLLM).toMatch(/^REPLY -NOAUTH Authentication required/);
    expect(result.forLLM).toMatch(/No such file or directory/);
    expect(result.forLLM).not.toContain(password);
    const check = new Redis(redis.url, { password });
    expect(await check.get('magpie:keep')).toBe('queued');
    check.disconnect();
  });
});

describe('MAGPIE_EXEC_SANDBOX', () => {
  let ws: string;
  beforeAll(async () => {
    ws = await realpath(await mkdtemp(path.join(os.tmpdir(), 'magpie-sandbox-mode-')));
  });
  afterAll(() => rm(ws, { recursive: true, force: true }));

  it('auto uses bwrap when it works', async () => {
    const status = await resolveSandbox('auto', { workspace: ws });
    expect(status.kind).toBe('bwrap');
    if (status.kind === 'bwrap')
      expect(status.sandbox.describe()).toMatch(
        /^bwrap \d+\.\d+(\.\d+)?, network off, mode workspace-write \(workspace read-write\), writable roots none, processes ≤256/,
      );
  });

  it('auto disables exec (fails closed), with the reason, when bwrap is missing or cannot start', async () => {
    expect(await resolveSandbox('auto', { workspace: ws, bwrapPath: '/nonexistent/bwrap' })).toMatchObject({
      kind: 'disabled',
      mode: 'auto',
      reason: expect.stringContaining('bwrap not found at /nonexistent/bwrap'),
    });
    const failing = await resolveSandbox('auto', { workspace: ws, bwrapPath: '/bin/false' });
    expect(failing).toMatchObject({ kind: 'disabled', mode: 'auto' });
  });

  it('bwrap without a working bwrap is a configuration error (exit 2) naming the fix', async () => {
    const error = await resolveSandbox('bwrap', { workspace: ws, bwrapPath: '/nonexistent/bwrap' }).catch(
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).exitCode).toBe(ExitCode.config);
    expect((error as AppError).message).toMatch(
      /^MAGPIE_EXEC_SANDBOX=bwrap but .*apt-get install bubblewrap/,
    );
  });

  it('off runs without a sandbox', async () => {
    expect(await resolveSandbox('off', { workspace: ws })).toEqual({
      kind: 'off',
      mode: 'off',
      reason: 'MAGPIE_EXEC_SANDBOX=off',
    });
  });
});

describe('MAGPIE_EXEC_SANDBOX and MAGPIE_EXEC_NETWORK in the config and in magpie doctor', () => {
  let ws: string;
  beforeAll(async () => {
    ws = await realpath(await mkdtemp(path.join(os.tmpdir(), 'magpie-sandbox-doctor-')));
  });
  afterAll(() => rm(ws, { recursive: true, force: true }));

  const config = (env: Record<string, string>) => parseConfig({ MAGPIE_WORKSPACE: ws, ...env });

  it('defaults to auto with the network off, and takes bwrap, off and on', () => {
    expect(config({}).tools).toMatchObject({ execSandbox: 'auto', execNetwork: false });
    expect(config({ MAGPIE_EXEC_SANDBOX: 'bwrap', MAGPIE_EXEC_NETWORK: 'on' }).tools).toMatchObject({
      execSandbox: 'bwrap',
      execNetwork: true,
    });
    expect(config({ MAGPIE_EXEC_SANDBOX: 'OFF', MAGPIE_EXEC_NETWORK: 'off' }).tools).toMatchObject({
      execSandbox: 'off',
      execNetwork: false,
    });
  });

  it('refuses other values with one line naming the variable', () => {
    expect(() => config({ MAGPIE_EXEC_SANDBOX: 'docker' })).toThrow(ConfigError);
    expect(() => config({ MAGPIE_EXEC_SANDBOX: 'docker' })).toThrow(
      /^MAGPIE_EXEC_SANDBOX "docker" must be auto, bwrap or off/,
    );
    expect(() => config({ MAGPIE_EXEC_NETWORK: 'maybe' })).toThrow(
      /^MAGPIE_EXEC_NETWORK "maybe" is not true or false/,
    );
  });

  it('doctor shows bwrap, its version and the network', async () => {
    const signal = new AbortController().signal;
    expect(await execSandboxCheck(config({})).run(signal)).toEqual({
      status: 'ok',
      detail: expect.stringMatching(
        /^bwrap \d+\.\d+(\.\d+)?, network off, mode workspace-write \(workspace read-write\), writable roots none, processes ≤256 \(/,
      ),
    });
    // It says who the commands run as on the host, and how memory is limited.
    const asRoot = process.getuid?.() === 0;
    const result = await execSandboxCheck(config({ MAGPIE_EXEC_MEMORY: '512MiB' })).run(signal);
    const detail = Array.isArray(result) ? '' : result.detail;
    expect(detail).toMatch(/memory ≤512 MiB (\(cgroup v2 memory\.max\)|of address space \(RLIMIT_AS\))/);
    expect(detail).toContain(
      asRoot
        ? 'runs as host uid 65534 (nobody, no capabilities; magpie is root)'
        : `runs as host uid ${process.getuid?.()} (magpie's user) in a user namespace`,
    );
    expect(await execSandboxCheck(config({ MAGPIE_EXEC_NETWORK: 'on' })).run(signal)).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(/, network on, /),
    });
    expect(await execSandboxCheck(config({ MAGPIE_EXEC_SANDBOX: 'off' })).run(signal)).toEqual({
      status: 'skip',
      detail:
        'off (MAGPIE_SANDBOX_MODE=full-access or MAGPIE_EXEC_SANDBOX=off): exec runs on the host as this user, guarded by a deny list only',
    });
  });
});
