/**
 * Temporary folders for the tests, made before each test of the describe
 * block the helper is called in and removed after it (after the block's own
 * afterEach hooks, which run first).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach } from 'vitest';
import { BIN } from '../e2e/daemon-helpers.js';
import { tempDir } from '../unit/tools/helpers.js';

/**
 * A fresh folder (real path) for each test; `use` receives it before the test runs.
 *
 * @example
 * let ws: string;
 * tempDirPerTest((dir) => { ws = dir; });
 */
export function tempDirPerTest(use: (dir: string) => void | Promise<void>, prefix?: string): void {
  let cleanup: (() => Promise<void>) | undefined;
  beforeEach(async () => {
    const made = await tempDir(prefix);
    cleanup = made.cleanup;
    await use(made.dir);
  });
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });
}

/** A workspace and a folder beside it that the workspace must not reach. */
export interface WorkspaceBesideOutside {
  /** The temporary folder holding both. */
  root: string;
  /** `<root>/ws`, made empty. */
  ws: string;
  /** `<root>/outside`, made empty. */
  outside: string;
}

/** For containment tests: empty `ws` and `outside` folders side by side under a fresh root, per test. */
export function workspaceBesideOutsidePerTest(
  use: (dirs: WorkspaceBesideOutside) => void | Promise<void>,
): void {
  tempDirPerTest(async (root) => {
    const dirs = { root, ws: path.join(root, 'ws'), outside: path.join(root, 'outside') };
    await mkdir(dirs.ws);
    await mkdir(dirs.outside);
    await use(dirs);
  });
}

/** A temporary folder `dir` holding a workspace `dir/ws` made by the built `magpie init` (run from `dir`, so no .env is read). */
export async function initedFolder(prefix: string): Promise<{ dir: string; workspace: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  const workspace = path.join(dir, 'ws');
  await promisify(execFile)(process.execPath, [BIN, 'init', '--workspace', workspace], {
    cwd: dir,
    env: { PATH: process.env.PATH },
  });
  return { dir, workspace };
}

/** Removes a folder made for a test file, if set-up got that far. */
export async function removeFolder(dir: string | undefined): Promise<void> {
  if (dir) await rm(dir, { recursive: true, force: true });
}

/** A workspace folder with SOUL.md and memory/MEMORY.md holding the given lines (several-agent tests). */
export function workspaceWith(dir: string, soul: string, memory: string): string {
  mkdirSync(path.join(dir, 'memory'), { recursive: true });
  writeFileSync(path.join(dir, 'SOUL.md'), `# Soul\n\n${soul}\n`);
  writeFileSync(path.join(dir, 'memory', 'MEMORY.md'), `# Memory\n\n${memory}\n`);
  return dir;
}
