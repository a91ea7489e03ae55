/**
 * Magpie under the real PM2 for the end-to-end tests: the environment of a
 * private PM2_HOME (so the machine's own PM2 is never touched) and its
 * clean-up.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { daemonEnv, ROOT, tempWorkspace } from '../e2e/daemon-helpers.js';

/** The project's own pm2 binary. */
export const PM2 = path.join(ROOT, 'node_modules', '.bin', 'pm2');

/**
 * The environment `pm2 start ecosystem.config.js` runs magpie in: the run's
 * Redis, the fake model at `openaiBaseURL`, a fresh workspace, two workers, and
 * PM2_HOME a new temporary folder whose name starts with `homePrefix`.
 */
export function pm2Env(openaiBaseURL: string, homePrefix: string): NodeJS.ProcessEnv {
  return {
    ...daemonEnv({
      REDIS_URL: inject('redisUrl'),
      OPENAI_BASE_URL: openaiBaseURL,
      MAGPIE_WORKSPACE: tempWorkspace(),
      MAGPIE_WORKERS: '2',
    }),
    PM2_HOME: mkdtempSync(path.join(os.tmpdir(), homePrefix)),
  };
}

/** `pm2 kill` in that environment (whatever state it is in), then removes its PM2_HOME. */
export async function killPm2(env: NodeJS.ProcessEnv | undefined): Promise<void> {
  if (!env?.PM2_HOME) return;
  await promisify(execFile)(PM2, ['kill'], { env, cwd: ROOT }).catch(() => undefined);
  rmSync(env.PM2_HOME, { recursive: true, force: true });
}
