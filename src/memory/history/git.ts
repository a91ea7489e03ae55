/**
 * The system's `git`, run with a fixed argv (execFile, no shell) against one
 * bare repository and nothing else: no work tree, no index, no user or system
 * config, no hooks, no pager, no prompts. Content goes in on stdin and comes
 * out on stdout, so git never opens a file of the (tool-writable) workspace.
 */
import { execFile } from 'node:child_process';
import { AppError, ExitCode } from '../../errors/index.js';

/** What a git run printed. */
export interface GitResult {
  stdout: string;
  /** The exit status (0 for success). */
  code: number;
}

/** Refuses any setting that could make git run a program or read another config. */
const FIXED_CONFIG = [
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.pager=cat',
  '-c',
  'gc.auto=0',
  '-c',
  'core.quotePath=false',
];

/** Runs git commands against one bare repository (`gitDir`). */
export class Git {
  constructor(readonly gitDir: string) {}

  /**
   * Runs `git <args>` with `input` on stdin. A non-zero exit resolves (callers that
   * expect one, like `rev-parse --verify`, read `code`) unless `check` is set.
   *
   * @throws AppError INTERNAL when git is missing or fails with `check`.
   */
  run(
    args: readonly string[],
    options: { input?: string; check?: boolean; author?: string } = {},
  ): Promise<GitResult> {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      GIT_DIR: this.gitDir,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
      GIT_OPTIONAL_LOCKS: '0',
      HOME: this.gitDir,
      LC_ALL: 'C',
      TZ: 'UTC',
      GIT_AUTHOR_NAME: options.author ?? 'magpie',
      GIT_AUTHOR_EMAIL: 'magpie@localhost',
      GIT_COMMITTER_NAME: 'magpie',
      GIT_COMMITTER_EMAIL: 'magpie@localhost',
    };
    return new Promise((resolve, reject) => {
      const child = execFile(
        'git',
        [...FIXED_CONFIG, ...args],
        { env, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
        (err, stdout, stderr) => {
          if (err && typeof err.code === 'string') {
            reject(
              new AppError(
                'INTERNAL',
                err.code === 'ENOENT'
                  ? 'git is not installed; the memory history needs it (apt-get install git)'
                  : `git could not run: ${err.code}`,
                { cause: err, exitCode: ExitCode.unavailable },
              ),
            );
            return;
          }
          const code = err ? Number(err.code ?? 1) : 0;
          if (code !== 0 && options.check) {
            const first = stderr.trim().split('\n')[0] ?? '';
            reject(new AppError('INTERNAL', `git ${args[0]} failed: ${first}`, { cause: err }));
            return;
          }
          resolve({ stdout, code });
        },
      );
      // A command that reads no input may exit before it is written: its exit status tells.
      child.stdin?.on('error', () => undefined);
      child.stdin?.end(options.input ?? '');
    });
  }

  /** Like {@link run} with `check`, returning stdout. */
  async out(args: readonly string[], options: { input?: string; author?: string } = {}): Promise<string> {
    return (await this.run(args, { ...options, check: true })).stdout;
  }
}
