/**
 * Helpers for the daemon end-to-end tests: a fresh build, a temporary
 * workspace, and `node dist/cli/bin.js <command>` subprocesses whose output
 * can be awaited line by line.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.join(ROOT, 'dist', 'cli', 'bin.js');

/** The newest modification time of any file under `dir`. */
function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(full) : statSync(full).mtimeMs);
  }
  return latest;
}

/** Builds dist/ when it is older than src/ (type errors elsewhere in the tree do not stop the emit). */
export function build(): void {
  if (existsSync(BIN) && statSync(BIN).mtimeMs >= newest(path.join(ROOT, 'src'))) return;
  try {
    execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'ignore' });
  } catch {
    // tsc exits non-zero on type errors but still emits; the check below decides.
  }
  // `npm run build` then bundles the CLI: the tests run the bundle users run.
  execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: ROOT, stdio: 'ignore' });
  if (!existsSync(BIN)) throw new Error('the build produced no dist/cli/bin.js');
}

/** A temporary workspace made by `magpie init`. */
export function tempWorkspace(): string {
  const dir = path.join(mkdtempSync(path.join(os.tmpdir(), 'magpie-e2e-')), 'ws');
  execFileSync(process.execPath, [BIN, 'init', '--workspace', dir], { stdio: 'ignore' });
  return dir;
}

/**
 * The folder state folders go under (XDG_STATE_HOME): the test run's temporary
 * one (test/fakes/global-setup.ts), never the real ~/.local/state.
 */
export function stateHome(): string {
  const dir = process.env.XDG_STATE_HOME;
  if (!dir?.startsWith(os.tmpdir())) {
    throw new Error('XDG_STATE_HOME is not a temporary folder: run the tests through vitest (global-setup)');
  }
  return dir as string;
}

/**
 * The environment of a daemon process: only what the test sets (plus PATH,
 * HOME and the run's temporary XDG_STATE_HOME).
 */
export function daemonEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    XDG_STATE_HOME: stateHome(),
    OPENAI_API_KEY: 'test-key',
    MAGPIE_QUEUE_PREFIX: `e2e-${randomUUID()}`,
    MAGPIE_HEARTBEAT_INTERVAL: '0',
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
    ...extra,
  };
}

export interface Proc {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves when stderr+stdout match `pattern`; rejects after `timeoutMs` or on exit. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves with the exit code (or the signal name). */
  exited: Promise<number | string>;
}

/** Pass as `input` to keep the child's stdin an open pipe (write to `child.stdin`, end it to finish). */
export const OPEN_STDIN = Symbol('open stdin');

/**
 * `magpie chat --chat <chatId> --timeout <timeout>` with `input` piped to it, pushed to `procs`
 * (the test's processes, stopped after it).
 */
export function pipedChat(
  procs: Proc[],
  chatId: string,
  timeout: string,
  env: NodeJS.ProcessEnv,
  input: string,
): Proc {
  const chat = magpie(['chat', '--chat', chatId, '--timeout', timeout], env, undefined, input);
  procs.push(chat);
  return chat;
}

/**
 * Spawns `node dist/cli/bin.js ...args` in `cwd` (default: a temp dir, so no stray .env is read);
 * `input`, when a string, is written to stdin, which is then closed.
 */
export function magpie(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd = os.tmpdir(),
  input?: string | typeof OPEN_STDIN,
): Proc {
  const child = spawn(process.execPath, [BIN, ...args], {
    env,
    cwd,
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (typeof input === 'string') child.stdin?.end(input);
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout?.on('data', (c: Buffer) => {
    out += c.toString();
    for (const l of listeners) l();
  });
  child.stderr?.on('data', (c: Buffer) => {
    err += c.toString();
    for (const l of listeners) l();
  });
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1));
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(pattern, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pattern.test(out) || pattern.test(err)) {
            cleanup();
            resolve();
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${pattern}; stderr: ${err.slice(-800)}`));
        }, timeoutMs);
        const onExit = () => {
          check();
          cleanup();
          reject(new Error(`process exited before ${pattern}; stderr: ${err.slice(-800)}`));
        };
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
        };
        listeners.add(check);
        child.once('exit', onExit);
        check();
      });
    },
  };
}

/** Stops a process if it still runs and waits for it. */
export async function stop(proc: Proc | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill(signal);
  await proc.exited;
}
