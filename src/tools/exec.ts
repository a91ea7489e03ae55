/**
 * exec: runs a shell command (`/bin/sh -c`) in the workspace. Refused before
 * it runs when the deny list matches; runs with a scrubbed environment in its
 * own process group, which is killed (SIGTERM, then SIGKILL) on timeout or
 * cancellation; output is capped, keeping its start and its end.
 */
import { z } from 'zod';
import { redactSecrets } from '../log/index.js';
import { denyReason, scrubEnv } from './exec-policy.js';
import { CANCELLED_RESULT } from './registry.js';
import { fail, type Tool, type ToolResult } from './types.js';
import { resolveInWorkspace } from './workspace-path.js';

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
  /** The environment to scrub and pass on. @defaultValue process.env */
  env?: NodeJS.ProcessEnv;
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
  | { kind: 'cancelled' };

/** The exec tool, running commands in `workspace`. */
export function createExecTool(workspace: string, options: ExecOptions = {}): Tool<typeof parameters> {
  const defaultTimeoutMs = options.timeoutMs ?? 60_000;
  const maxTimeoutMs = Math.max(options.maxTimeoutMs ?? 600_000, defaultTimeoutMs);
  const maxOutputChars = options.maxOutputChars ?? 10_000;
  const killGraceMs = options.killGraceMs ?? 2_000;
  const secrets = options.secrets ?? [];
  const env = scrubEnv(options.env ?? process.env);

  return {
    name: 'exec',
    description:
      'Run a shell command in the workspace folder and return its output and exit code. ' +
      `Default time limit ${Math.round(defaultTimeoutMs / 1000)} s; destructive commands are refused.`,
    parameters,
    async execute({ command, timeout_seconds: timeoutSeconds }, ctx): Promise<ToolResult> {
      const denied = denyReason(command);
      if (denied) {
        return fail(`command refused by the safety policy (${denied}); destructive commands are not allowed`);
      }
      const cwd = await resolveInWorkspace(workspace, '.');
      const timeoutMs = Math.min(
        timeoutSeconds === undefined ? defaultTimeoutMs : timeoutSeconds * 1000,
        maxTimeoutMs,
      );
      const capture = new OutputCapture(maxOutputChars);
      // Loaded at the first command, not at start-up (most turns run none).
      const { spawn } = await import('node:child_process');
      const child = spawn('/bin/sh', ['-c', command], {
        cwd,
        env,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => capture.push(chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => capture.push(chunk));

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

      const ending = await new Promise<Ending>((resolve) => {
        let settled: Ending | undefined;
        let killTimer: NodeJS.Timeout | undefined;
        const stop = (kind: 'timeout' | 'cancelled'): void => {
          if (settled) return;
          settled = { kind };
          killGroup('SIGTERM');
          killTimer = setTimeout(() => killGroup('SIGKILL'), killGraceMs);
          killTimer.unref();
        };
        const timer = setTimeout(() => stop('timeout'), timeoutMs);
        const onAbort = (): void => stop('cancelled');
        ctx.signal.addEventListener('abort', onAbort, { once: true });
        if (ctx.signal.aborted) onAbort();
        const finish = (end: Ending): void => {
          clearTimeout(timer);
          if (killTimer) clearTimeout(killTimer);
          // Whatever of the group outlived sh after a timeout or cancel goes now.
          if (settled) killGroup('SIGKILL');
          ctx.signal.removeEventListener('abort', onAbort);
          resolve(settled ?? end);
        };
        child.once('error', (err) => {
          capture.push(`failed to start: ${err.message}`);
          finish({ kind: 'exit', code: null, signal: null });
        });
        child.once('exit', (code, signal) => {
          // A background process may keep the pipes open; stop reading once sh is gone.
          const drain = setTimeout(() => {
            child.stdout.destroy();
            child.stderr.destroy();
            finish({ kind: 'exit', code, signal });
          }, 200);
          child.once('close', () => {
            clearTimeout(drain);
            finish({ kind: 'exit', code, signal });
          });
        });
      });

      if (ending.kind === 'cancelled') return { ...CANCELLED_RESULT };
      const output = redactSecrets(capture.text(), secrets).trimEnd();
      const body = output === '' ? '(no output)' : output;
      if (ending.kind === 'timeout') {
        return fail(`command timed out after ${timeoutMs / 1000} s and was killed\n${body}`);
      }
      const status = ending.signal ? `killed by ${ending.signal}` : `exit code ${ending.code ?? 'unknown'}`;
      const text = `${body}\n[${status}]`;
      return ending.code === 0 ? { forLLM: text } : { forLLM: text, isError: true };
    },
  };
}
