/**
 * Vitest global set-up: one real redis-server for the whole run (tests use
 * unique prefixes), and a temporary XDG_STATE_HOME, so nothing a test or a
 * spawned `magpie` writes into its state folder (private Redis, passwords,
 * tokens, indexes) lands in the real ~/.local/state. Each workspace still
 * gets its own state folder below it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
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
    rmSync(stateHome, { recursive: true, force: true });
  };
}
