/**
 * A daemon started with secrets in its environment (systemd's
 * `Environment=`, `docker run -e`, a shell's `export`) sheds them, so
 * `/proc/<pid>/environ`, which keeps the environment a process was started
 * with and which every process of the same user can read, holds none; nor
 * does any child it starts. On Linux the values are blanked in place in the
 * memory that file shows (environ-scrub.ts, checked by reading it back): one
 * Node start-up. Where that cannot be done, the process re-executes itself
 * without them; the secrets travel to the re-executed process through a 0600
 * file in a private temporary folder, which it reads and removes at once.
 * Either way they then live only in memory (config/secret-env.ts).
 *
 * It runs first thing in `magpie agent` and the role commands (cli/run.ts, before the
 * command's own module loads), so the process that is replaced has loaded almost
 * nothing; for that this file stays light: no channel registry, no zod.
 */
import { lstatSync, mkdtempSync, readFileSync, rmdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { holdSecrets, isSecretEnvName } from '../config/secret-env.js';
import { ConfigError } from '../errors/index.js';
import { scrubEnviron } from './environ-scrub.js';

/** Names the hand-over file to the re-executed process. */
export const HANDOFF_VARIABLE = 'MAGPIE_SECRET_HANDOFF';

/**
 * True for a variable that must not stay in the environment: a secret by its name
 * (config/secret-env.ts). A unit test checks that every secret variable of the core
 * and of every channel is shed.
 */
export function isShedVariable(name: string): boolean {
  return isSecretEnvName(name);
}

/** The private temporary folder's name starts so (mkdtemp makes it 0700). */
const HANDOFF_PREFIX = 'magpie-handoff-';

/** What {@link shedSecretEnvironment} did. */
export type ShedOutcome =
  | { kind: 'clean' }
  /** Blanked in place: /proc/<pid>/environ was read back without them (no re-execution). */
  | { kind: 'scrubbed'; names: string[] }
  | { kind: 'received'; names: string[] }
  /** process.execve failed: the secrets are out of process.env (children), not out of /proc. */
  | { kind: 'kept'; names: string[]; reason: string };

/** What the process is and how it replaces itself; the real process unless a test says otherwise. */
export interface ShedProcess {
  env: NodeJS.ProcessEnv;
  /**
   * Blanks the named variables where /proc/<pid>/environ shows them; true when it reads
   * back clean (environ-scrub.ts). Absent: the process re-executes instead.
   */
  scrubEnviron?(isSecret: (name: string) => boolean): boolean;
  execve(file: string, args: string[], env: NodeJS.ProcessEnv): never;
  argv: string[];
  execArgv: string[];
  execPath: string;
}

const realProcess = (): ShedProcess => ({
  env: process.env,
  scrubEnviron,
  execve: (file, args, env) => {
    if (!process.execve) throw new Error('this Node has no process.execve');
    return process.execve(file, args, env) as never;
  },
  argv: process.argv,
  execArgv: process.execArgv,
  execPath: process.execPath,
});

/** What the first shedding of this process came to; later calls return it. */
let settled: ShedOutcome | undefined;

/**
 * Receives the secrets a former self handed over, or, when secrets are in the
 * environment, blanks them in place or else re-executes this process without
 * them (it does not return then). Call before the config is read. For the real process it runs once:
 * a second call (cli/run.ts sheds before the command's own call) returns what
 * the first came to.
 *
 * @throws ConfigError when MAGPIE_SECRET_HANDOFF names anything but a 0600 file of this user.
 */
export function shedSecretEnvironment(proc?: ShedProcess): ShedOutcome {
  if (proc) return shed(proc);
  settled ??= shed(realProcess());
  return settled;
}

function shed(proc: ShedProcess): ShedOutcome {
  const { env } = proc;
  const handoff = env[HANDOFF_VARIABLE];
  if (handoff !== undefined) {
    delete env[HANDOFF_VARIABLE];
    const values = receive(handoff);
    holdSecrets(values);
    return { kind: 'received', names: Object.keys(values) };
  }
  const names = Object.keys(env).filter((name) => env[name] !== undefined && isShedVariable(name));
  if (names.length === 0) return { kind: 'clean' };
  const secrets: Record<string, string> = {};
  const rest: NodeJS.ProcessEnv = { ...env };
  for (const name of names) {
    secrets[name] = env[name] as string;
    delete rest[name];
  }
  // Out of process.env (unsetenv) before their memory is blanked, so nothing reads it afterwards.
  for (const name of names) delete env[name];
  if (proc.scrubEnviron?.(isShedVariable)) {
    holdSecrets(secrets);
    return { kind: 'scrubbed', names };
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), HANDOFF_PREFIX));
  const file = path.join(dir, 'secrets.json');
  try {
    writeFileSync(file, JSON.stringify(secrets), { mode: 0o600, flag: 'wx' });
    proc.execve(proc.execPath, [proc.execPath, ...proc.execArgv, ...proc.argv.slice(1)], {
      ...rest,
      [HANDOFF_VARIABLE]: file,
    });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    // Still out of every child's environment, if not out of this process's /proc entry.
    holdSecrets(secrets);
    return { kind: 'kept', names, reason: (err as Error).message };
  }
}

/** Reads and removes the hand-over file (and its folder); only a 0600 regular file of this user is read. */
function receive(file: string): Record<string, string> {
  const refuse = (why: string) =>
    new ConfigError(`${HANDOFF_VARIABLE} names ${file}, which ${why}: unset ${HANDOFF_VARIABLE}`);
  let stats: ReturnType<typeof lstatSync>;
  try {
    stats = lstatSync(file);
  } catch {
    throw refuse('does not exist');
  }
  if (!stats.isFile() || stats.uid !== process.getuid?.() || (stats.mode & 0o077) !== 0) {
    throw refuse('is not a private (0600) file of this user');
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } finally {
    unlinkSync(file);
    const dir = path.dirname(file);
    if (path.basename(dir).startsWith(HANDOFF_PREFIX)) {
      try {
        rmdirSync(dir);
      } catch {
        // Not empty or gone: nothing of the secrets is left in it.
      }
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw refuse('is not a hand-over file');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw refuse('is not a hand-over file');
  const values: Record<string, string> = {};
  for (const [name, value] of Object.entries(parsed)) if (typeof value === 'string') values[name] = value;
  return values;
}
