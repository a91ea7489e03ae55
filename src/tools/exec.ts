/**
 * exec: runs a shell command (`/bin/sh -c`) in the workspace. With a sandbox
 * (sandbox.ts) the command runs under bubblewrap and the deny list only
 * refuses catastrophic commands, as a courtesy; without one the deny list is
 * the whole guard (exec-policy.ts) and the command sees a scrubbed copy of
 * magpie's environment. Either way the command runs in its own process group,
 * which is killed after every command (SIGTERM, then SIGKILL, on timeout or
 * cancellation; SIGKILL for whatever a finished command left behind); output
 * is capped, keeping its start and its end, and secret values are redacted.
 * Disabled (MAGPIE_EXEC_SANDBOX=auto with no working sandbox), it runs nothing
 * and every call returns one line saying so and what the operator can do.
 */
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { describeError } from '../errors/index.js';
import { redactSecrets } from '../log/index.js';
import { resolveInWorkspace } from '../workspace/workspace-path.js';
import { denyReason, MAX_COMMAND_CHARS, scrubEnv } from './exec-policy.js';
import { CANCELLED_RESULT } from './registry.js';
import {
  type BwrapSandbox,
  EXEC_DISABLED_MESSAGE,
  type PreparedCommand,
  preparedStdio,
  sendSeccomp,
} from './sandbox.js';
import { fail, type Tool, type ToolContext, type ToolResult } from './types.js';
import { workspaceBytes } from './workspace-size.js';

export interface ExecOptions {
  /** @defaultValue 60_000 */
  timeoutMs?: number;
  /** Longest timeout the model may ask for. @defaultValue 600_000 */
  maxTimeoutMs?: number;
  /** Characters of output returned. @defaultValue 10_000 */
  maxOutputChars?: number;
  /** Time between SIGTERM and SIGKILL. @defaultValue 2_000 */
  killGraceMs?: number;
  /** Values redacted from the output. @defaultValue [] */
  secrets?: string[];
  /** Without a sandbox: the environment to scrub and pass on. @defaultValue process.env */
  env?: NodeJS.ProcessEnv;
  /** Run every command in this sandbox. @defaultValue none: on the host, behind the full deny list */
  sandbox?: BwrapSandbox;
  /** Run nothing: every call says exec is disabled (no sandbox could start). @defaultValue false */
  disabled?: boolean;
  /**
   * With a sandbox: the workspace's size (bytes allocated) a command may grow it to; checked
   * about every 250 ms while it runs, and the command stopped past it. @defaultValue no cap
   */
  workspaceMaxBytes?: number;
  /** How often the workspace's size is checked, in ms. @defaultValue 250 */
  workspacePollMs?: number;
  /**
   * Without a sandbox: files and folders no command may name (magpie's `.env`,
   * its state folder). @defaultValue []
   */
  protectedPaths?: string[];
}

/** Keeps the first and last `max / 2` characters of a stream of text. */
export class OutputCapture {
  private head = '';
  private tail = '';
  private total = 0;

  constructor(private readonly max: number) {}

  push(chunk: string): void {
    this.total += chunk.length;
    const half = Math.floor(this.max / 2);
    if (this.head.length < this.max) {
      const room = this.max - this.head.length;
      this.head += chunk.slice(0, room);
      chunk = chunk.slice(room);
      if (chunk === '') return;
    }
    this.tail = (this.tail + chunk).slice(-half);
  }

  /** The captured text, with a marker where the middle was dropped. */
  text(): string {
    if (this.total <= this.max) return this.head + this.tail;
    const half = Math.floor(this.max / 2);
    const head = this.head.slice(0, half);
    const omitted = this.total - head.length - this.tail.length;
    return `${head}\n… [output truncated: ${omitted} characters omitted] …\n${this.tail}`;
  }
}

const parameters = z.object({
  command: z.string().min(1).describe('The shell command to run (POSIX sh), in the workspace folder'),
  timeout_seconds: z.number().positive().optional().describe('Time limit in seconds; default 60'),
});

type Ending =
  | { kind: 'exit'; code: number | null; signal: NodeJS.Signals | null }
  | { kind: 'timeout' }
  | { kind: 'cancelled' }
  | { kind: 'disk' };

/** The exec tool, running commands in `workspace`. */
export function createExecTool(workspace: string, options: ExecOptions = {}): Tool<typeof parameters> {
  const defaultTimeoutMs = options.timeoutMs ?? 60_000;
  const maxTimeoutMs = Math.max(options.maxTimeoutMs ?? 600_000, defaultTimeoutMs);
  const maxOutputChars = options.maxOutputChars ?? 10_000;
  const killGraceMs = options.killGraceMs ?? 2_000;
  const secrets = options.secrets ?? [];
  const { sandbox } = options;
  const env = scrubEnv(options.env ?? process.env);
  const policy = sandbox
    ? ({ level: 'courtesy' } as const)
    : ({ level: 'guard', workspace, protectedPaths: options.protectedPaths ?? [] } as const);
  const timeoutOf = (seconds: number | undefined): number =>
    Math.min(seconds === undefined ? defaultTimeoutMs : seconds * 1000, maxTimeoutMs);

  return {
    name: 'exec',
    description:
      'Run a shell command in the workspace folder and return its output and exit code. ' +
      `Default time limit ${Math.round(defaultTimeoutMs / 1000)} s; destructive commands are refused.` +
      (options.disabled
        ? ' Currently disabled: no sandbox could be started here, so every call is refused.'
        : sandbox
          ? ` Runs in a sandbox: ${sandboxedWrites(sandbox)}, /tmp is private and emptied after each command, the rest of the system is read-only, network ${sandbox.network ? 'on' : 'off'}; nothing started in the background outlives the command.`
          : ''),
    parameters,
    timeLimitMs: ({ timeout_seconds: seconds }) => timeoutOf(seconds) + killGraceMs + 5_000,
    async execute({ command, timeout_seconds: timeoutSeconds }, ctx): Promise<ToolResult> {
      if (options.disabled) return fail(EXEC_DISABLED_MESSAGE);
      if (command.length > MAX_COMMAND_CHARS) {
        // Too long to check (the check must stay quick on any input): refused unread, with what to do instead.
        return fail(`command refused: ${denyReason(command, policy)}`);
      }
      const denied = denyReason(command, policy);
      if (denied) {
        return fail(`command refused by the safety policy (${denied}); destructive commands are not allowed`);
      }
      const cwd = await resolveInWorkspace(workspace, '.');
      const timeoutMs = timeoutOf(timeoutSeconds);
      let prepared: PreparedCommand;
      try {
        prepared = sandbox
          ? await sandbox.prepare(command, timeoutMs / 1000)
          : {
              file: '/bin/sh',
              args: ['-c', command],
              env: env as Record<string, string>,
              release: async () => {},
            };
      } catch (err) {
        return fail(`the sandbox could not be prepared: ${describeError(err)}`);
      }
      const capture = new OutputCapture(maxOutputChars);
      let ending: Ending;
      try {
        const cap = sandbox ? options.workspaceMaxBytes : undefined;
        const watch =
          cap === undefined
            ? undefined
            : { dir: workspace, maxBytes: cap, everyMs: options.workspacePollMs ?? 250 };
        ending = await runGroup(prepared, { cwd, timeoutMs, killGraceMs, capture, ctx, watch });
      } finally {
        await prepared.release();
      }
      if (ending.kind === 'cancelled') return { ...CANCELLED_RESULT };
      const output = redactSecrets(capture.text(), secrets).trimEnd();
      const body = output === '' ? '(no output)' : output;
      if (ending.kind === 'disk') {
        const mib = Math.round((options.workspaceMaxBytes ?? 0) / 1024 ** 2);
        return fail(
          `command stopped: it grew the workspace past its ${mib} MiB cap (MAGPIE_WORKSPACE_MAX_BYTES); delete what it wrote or write less\n${body}`,
        );
      }
      if (ending.kind === 'timeout') {
        return fail(`command timed out after ${timeoutMs / 1000} s and was killed\n${body}`);
      }
      const status = ending.signal ? `killed by ${ending.signal}` : `exit code ${ending.code ?? 'unknown'}`;
      const text = `${body}\n[${status}]`;
      return ending.code === 0 ? { forLLM: text } : { forLLM: text, isError: true };
    },
  };
}

/** What a sandboxed command may write, for the tool's description. */
function sandboxedWrites(sandbox: BwrapSandbox): string {
  const workspace = sandbox.workspaceReadOnly
    ? 'the workspace is read-only (MAGPIE_SANDBOX_MODE=read-only)'
    : 'the workspace is writable (sessions/, .memory-history/ and .magpie-id read-only)';
  const roots = sandbox.writableRoots;
  return roots.length > 0 ? `${workspace}; also writable: ${roots.join(', ')}` : workspace;
}

interface RunOptions {
  cwd: string;
  timeoutMs: number;
  killGraceMs: number;
  capture: OutputCapture;
  ctx: ToolContext;
  /** Stop the command when `dir` takes more than `maxBytes` and more than when it started. */
  watch?: { dir: string; maxBytes: number; everyMs: number };
}

/**
 * Spawns the prepared command as the leader of a new process group and waits
 * for it; the group is killed on timeout or cancellation and, once the
 * leader has ended, killed again so no background child outlives it.
 */
async function runGroup(prepared: PreparedCommand, options: RunOptions): Promise<Ending> {
  const { capture, ctx } = options;
  // Loaded at the first command, not at start-up (most turns run none).
  const { spawn } = await import('node:child_process');
  const { watch } = options;
  // A workspace already past the cap may still be used: only growth past it stops a command.
  const startBytes = watch ? await workspaceBytes(watch.dir) : 0;
  const child = spawn(prepared.file, prepared.args, {
    cwd: options.cwd,
    env: prepared.env,
    detached: true,
    stdio: preparedStdio(prepared, ['ignore', 'pipe', 'pipe']),
  });
  sendSeccomp(child, prepared);
  // Both are pipes (preparedStdio only adds one for the seccomp filter).
  const stdout = child.stdout as Readable;
  const stderr = child.stderr as Readable;
  stdout.setEncoding('utf8').on('data', (chunk: string) => capture.push(chunk));
  stderr.setEncoding('utf8').on('data', (chunk: string) => capture.push(chunk));

  const killGroup = (signal: NodeJS.Signals): void => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch (err) {
      // ESRCH: the group is already gone, which is what we wanted.
      if (!(err instanceof Error && 'code' in err && err.code === 'ESRCH'))
        ctx.logger.warn({ err }, 'exec kill failed');
    }
  };

  return new Promise<Ending>((resolve) => {
    let settled: Ending | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let done = false;
    const stop = (kind: 'timeout' | 'cancelled' | 'disk'): void => {
      if (settled) return;
      settled = { kind };
      killGroup('SIGTERM');
      killTimer = setTimeout(() => killGroup('SIGKILL'), options.killGraceMs);
      killTimer.unref();
    };
    const timer = setTimeout(() => stop('timeout'), options.timeoutMs);
    let measuring = false;
    const poll = watch
      ? setInterval(() => {
          if (measuring || settled) return;
          measuring = true;
          void workspaceBytes(watch.dir)
            .then((bytes) => {
              if (bytes > watch.maxBytes && bytes > startBytes) stop('disk');
            })
            .finally(() => {
              measuring = false;
            });
        }, watch.everyMs)
      : undefined;
    const onAbort = (): void => stop('cancelled');
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    if (ctx.signal.aborted) onAbort();
    const finish = (end: Ending): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (poll) clearInterval(poll);
      if (killTimer) clearTimeout(killTimer);
      // Whatever of the group outlived the command goes now, however it ended.
      killGroup('SIGKILL');
      ctx.signal.removeEventListener('abort', onAbort);
      resolve(settled ?? end);
    };
    child.once('error', (err) => {
      capture.push(`failed to start: ${err.message}`);
      finish({ kind: 'exit', code: null, signal: null });
    });
    child.once('exit', (code, signal) => {
      // Background children die with the command; what they wrote is still read to the end.
      killGroup('SIGKILL');
      // One that left the group may keep the pipes open: stop reading shortly after.
      const drain = setTimeout(() => {
        stdout.destroy();
        stderr.destroy();
        finish({ kind: 'exit', code, signal });
      }, 200);
      child.once('close', () => {
        clearTimeout(drain);
        finish({ kind: 'exit', code, signal });
      });
    });
  });
}
