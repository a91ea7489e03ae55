/**
 * What the tools may change, and who is asked first: MAGPIE_SANDBOX_MODE
 * (read-only, workspace-write, full-access) settled with MAGPIE_EXEC_SANDBOX,
 * MAGPIE_WRITABLE_ROOTS checked against the folders magpie keeps from the
 * tools, and the approval settings (MAGPIE_APPROVAL*). Every refusal is one
 * ConfigError line naming the variables and the fix.
 */
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../errors/index.js';
import { choice, duration, list, optionalChoice } from './env-values.js';

/** MAGPIE_SANDBOX_MODE's values, from the most to the least confined. */
export const SANDBOX_ACCESS_MODES = ['read-only', 'workspace-write', 'full-access'] as const;
/**
 * What the model's tools may change: `read-only` nothing of the workspace,
 * `workspace-write` the workspace (and the writable roots, through exec),
 * `full-access` anything the magpie user can (exec without a sandbox).
 */
export type SandboxAccess = (typeof SANDBOX_ACCESS_MODES)[number];

/** MAGPIE_EXEC_SANDBOX's values. */
export const EXEC_SANDBOX_MODES = ['auto', 'bwrap', 'off'] as const;
export type ExecSandboxMode = (typeof EXEC_SANDBOX_MODES)[number];

/** MAGPIE_APPROVAL's values: no approvals, risky tool calls only, every tool call. */
export const APPROVAL_MODES = ['off', 'risky', 'all'] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];

/** MAGPIE_APPROVAL_UNATTENDED's values: what a call needing approval does when nobody can be asked. */
export const UNATTENDED_MODES = ['ask', 'deny'] as const;
export type UnattendedMode = (typeof UNATTENDED_MODES)[number];

/** `config.sandbox`: what the model's tools may change. */
export interface SandboxConfig {
  /** MAGPIE_SANDBOX_MODE; `full-access` also when only MAGPIE_EXEC_SANDBOX=off is set. @defaultValue 'workspace-write' */
  mode: SandboxAccess;
  /**
   * MAGPIE_WRITABLE_ROOTS: real paths of folders outside the workspace that sandboxed
   * commands may also write (bound read-write at the same path). Empty in read-only and
   * full-access mode (refused there). @defaultValue []
   */
  writableRoots: readonly string[];
}

/** `config.approval`: which tool calls wait for the owner's yes, and for how long. */
export interface ApprovalConfig {
  /** MAGPIE_APPROVAL: `off`, `risky` or `all`. @defaultValue 'risky' */
  mode: ApprovalMode;
  /** MAGPIE_APPROVAL_TIMEOUT: how long a question waits for an answer. @defaultValue 600_000 (10m) */
  timeoutMs: number;
  /** MAGPIE_APPROVAL_UNATTENDED: with nobody to answer (heartbeat, cron), ask anyway or deny. @defaultValue 'ask' */
  unattended: UnattendedMode;
}

/** The schema entries of the sandbox variables (unset MAGPIE_SANDBOX_MODE / MAGPIE_EXEC_SANDBOX: undefined). */
export const SANDBOX_ENV = {
  MAGPIE_EXEC_SANDBOX: optionalChoice(EXEC_SANDBOX_MODES),
  MAGPIE_SANDBOX_MODE: optionalChoice(SANDBOX_ACCESS_MODES),
  MAGPIE_WRITABLE_ROOTS: list,
};

/** The schema entries of the approval variables. */
export const APPROVAL_ENV = {
  MAGPIE_APPROVAL: choice(APPROVAL_MODES, 'risky'),
  MAGPIE_APPROVAL_TIMEOUT: duration('10m'),
  MAGPIE_APPROVAL_UNATTENDED: choice(UNATTENDED_MODES, 'ask'),
};

/** The approval settings from their validated variables. */
export function approvalConfig(e: {
  MAGPIE_APPROVAL: ApprovalMode;
  MAGPIE_APPROVAL_TIMEOUT: number;
  MAGPIE_APPROVAL_UNATTENDED: UnattendedMode;
}): ApprovalConfig {
  return {
    mode: e.MAGPIE_APPROVAL,
    timeoutMs: e.MAGPIE_APPROVAL_TIMEOUT,
    unattended: e.MAGPIE_APPROVAL_UNATTENDED,
  };
}

/** What a writable root may not be, contain or lie in: magpie's own folders and files. */
export interface GuardedPaths {
  workspace: string;
  stateDir: string;
  /** Files exec must never change (mcp.json, `.env`), by the name the error gives them. */
  files: ReadonlyArray<{ name: string; path: string }>;
}

/**
 * System folders the sandbox binds read-only or makes itself; a writable root
 * may not lie in one (the private `/tmp` itself neither, a folder inside it may).
 */
const SYSTEM_FOLDERS = [
  '/usr',
  '/etc',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/boot',
  '/proc',
  '/sys',
  '/dev',
];

/**
 * Settles MAGPIE_SANDBOX_MODE with MAGPIE_EXEC_SANDBOX and checks
 * MAGPIE_WRITABLE_ROOTS: `full-access` is exec without a sandbox
 * (MAGPIE_EXEC_SANDBOX=off); an unset mode is `full-access` under
 * MAGPIE_EXEC_SANDBOX=off and `workspace-write` otherwise.
 *
 * @throws ConfigError (one line) when the two variables contradict each other, or for a
 *   writable root that is relative, missing, `/`, a system folder, overlaps the workspace,
 *   the state folder or another root, or holds a guarded file, and for roots in read-only or
 *   full-access mode.
 * @example
 * settleSandbox({ mode: 'read-only', roots: [] }, guarded) // { execSandbox: 'auto', sandbox: { mode: 'read-only', writableRoots: [] } }
 */
export function settleSandbox(
  vars: { mode: SandboxAccess | undefined; execSandbox: ExecSandboxMode | undefined; roots: string[] },
  guarded: GuardedPaths,
): { execSandbox: ExecSandboxMode; sandbox: SandboxConfig } {
  const { mode: asked, execSandbox: exec } = vars;
  if (asked === 'full-access' && exec !== undefined && exec !== 'off') {
    throw new ConfigError(
      `MAGPIE_SANDBOX_MODE=full-access runs exec without a sandbox but MAGPIE_EXEC_SANDBOX=${exec} asks for one: remove one of the two (full-access is MAGPIE_EXEC_SANDBOX=off)`,
    );
  }
  if (asked !== undefined && asked !== 'full-access' && exec === 'off') {
    throw new ConfigError(
      `MAGPIE_SANDBOX_MODE=${asked} needs exec's sandbox but MAGPIE_EXEC_SANDBOX=off turns it off: remove one of the two (MAGPIE_SANDBOX_MODE=full-access is the name for no sandbox)`,
    );
  }
  const mode: SandboxAccess = asked ?? (exec === 'off' ? 'full-access' : 'workspace-write');
  if (vars.roots.length > 0 && mode !== 'workspace-write') {
    const setting = asked === undefined ? 'MAGPIE_EXEC_SANDBOX=off' : `MAGPIE_SANDBOX_MODE=${mode}`;
    const why =
      mode === 'read-only'
        ? 'read-only mode lets exec write nothing'
        : 'without a sandbox there is nothing to bind them into (exec may already write whatever the magpie user can)';
    throw new ConfigError(
      `MAGPIE_WRITABLE_ROOTS is set but ${setting}: ${why}; empty MAGPIE_WRITABLE_ROOTS or set MAGPIE_SANDBOX_MODE=workspace-write`,
    );
  }
  return {
    execSandbox: mode === 'full-access' ? 'off' : (exec ?? 'auto'),
    sandbox: { mode, writableRoots: checkWritableRoots(vars.roots, guarded) },
  };
}

/** The real paths of `roots`, duplicates dropped, after every check of {@link settleSandbox}. */
function checkWritableRoots(roots: string[], guarded: GuardedPaths): string[] {
  const workspace = realForms(guarded.workspace);
  const stateDir = realForms(guarded.stateDir);
  const files = guarded.files.map((f) => ({ name: f.name, forms: realForms(f.path) }));
  const kept: Array<{ given: string; real: string }> = [];
  for (const given of roots) {
    const refuse = (why: string, fix: string): never => {
      throw new ConfigError(`MAGPIE_WRITABLE_ROOTS holds ${given}, ${why}: ${fix}`);
    };
    if (!path.isAbsolute(given))
      refuse('which is not an absolute path', 'list absolute folders, e.g. /srv/shared');
    const real =
      realFolder(given) ?? refuse('which does not exist', 'create the folder or take it off the list');
    if (real === '') refuse('which is not a folder', 'list folders only');
    if (real === '/') refuse('the whole file system', 'list the folders exec may write, not /');
    if (real === '/tmp') refuse("the sandbox's private /tmp", 'list a folder inside it instead');
    const system = SYSTEM_FOLDERS.find((dir) => isWithin(dir, real));
    if (system) refuse(`inside ${system}, which the sandbox keeps read-only`, 'list a folder of your own');
    for (const ws of workspace) {
      if (isWithin(real, ws))
        refuse(`which contains the workspace ${ws} (and so sessions/)`, 'list a folder beside the workspace');
      if (isWithin(ws, real))
        refuse(`inside the workspace ${ws}, which MAGPIE_SANDBOX_MODE governs`, 'take it off the list');
    }
    for (const state of stateDir) {
      if (isWithin(real, state) || isWithin(state, real))
        refuse(
          `which overlaps magpie's state folder ${state} (the Redis password, indexes)`,
          'list a folder outside it',
        );
    }
    for (const file of files) {
      const held = file.forms.find((form) => isWithin(real, form));
      if (held)
        refuse(`holding ${file.name} (${held}), which exec must never change`, 'list a folder without it');
    }
    const other = kept.find((k) => isWithin(k.real, real) || isWithin(real, k.real));
    if (other?.real === real) continue;
    if (other) refuse(`and ${other.given}, one inside the other`, 'list only the outer folder');
    kept.push({ given, real });
  }
  return kept.map((k) => k.real);
}

/** The real path of folder `dir`; '' when it is something else, undefined when it does not exist. */
function realFolder(dir: string): string | undefined {
  try {
    const real = realpathSync(dir);
    return statSync(real).isDirectory() ? real : '';
  } catch {
    return undefined;
  }
}

/** `p` as given and, where it (or its folder) exists, as its real path. */
function realForms(p: string): string[] {
  const resolved = path.resolve(p);
  let real: string;
  try {
    real = realpathSync(resolved);
  } catch {
    try {
      real = path.join(realpathSync(path.dirname(resolved)), path.basename(resolved));
    } catch {
      real = resolved;
    }
  }
  return real === resolved ? [resolved] : [resolved, real];
}

/** True when `inner` is `outer` or lies below it (by path, symlinks not followed). */
export function isWithin(outer: string, inner: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}
