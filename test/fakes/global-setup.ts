/**
 * Vitest global set-up: one real redis-server for the whole run (tests use
 * unique prefixes), and a temporary XDG_STATE_HOME, so nothing a test or a
 * spawned `magpie` writes into its state folder (private Redis, passwords,
 * tokens, indexes) lands in the real ~/.local/state. Each workspace still
 * gets its own state folder below it.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { makeOpusAudio } from './opus-audio.js';
import { startRedis } from './redis-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    /** A real OGG/Opus file (espeak-ng → opusenc), made once per run; see opus-audio.ts. */
    opusFile: string;
  }
}

export default async function setup(project: TestProject) {
  // Set before the test workers start, so they and every process they spawn inherit it.
  const stateHome = mkdtempSync(path.join(os.tmpdir(), 'magpie-state-'));
  process.env.XDG_STATE_HOME = stateHome;
  delete process.env.MAGPIE_STATE_DIR;
  const redis = await startRedis();
  project.provide('redisUrl', redis.url);
  project.provide('opusFile', await makeOpusAudio(stateHome));
  return async () => {
    await redis.stop();
    stopLeftPrivateRedis(stateHome);
    rmSync(stateHome, { recursive: true, force: true });
  };
}

/**
 * Stops the private redis-servers that `magpie start` processes left running under the run's
 * state folders. One SIGKILLed (or killed after its stop timed out) cannot stop its own, which
 * runs detached so that the next `magpie start` reuses it; after the run nothing will.
 */
function stopLeftPrivateRedis(stateHome: string): void {
  const root = path.join(stateHome, 'magpie');
  let folders: string[];
  try {
    folders = readdirSync(root);
  } catch {
    return; // no state folder was made
  }
  for (const folder of folders) {
    let pid: unknown;
    try {
      pid = JSON.parse(readFileSync(path.join(root, folder, 'redis', 'magpie.json'), 'utf8')).pid;
    } catch {
      continue; // no private Redis recorded here
    }
    if (!Number.isInteger(pid)) continue;
    let command: string;
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue; // already gone
    }
    // The recorded pid may have been reused by another process since.
    if (command.includes('redis-server')) process.kill(pid as number, 'SIGKILL');
  }
}
