/**
 * What a worker loads until it runs (issue 29, worker RSS): the code of a
 * feature that is off, or that runs once a day, stays on disk. With the
 * default configuration a worker loads no backup code (tar, age-encryption
 * and its curves: loaded at the first scheduled backup), no voice code
 * (loaded with MAGPIE_TTS on), no Bull Board (loaded by a dashboard's first
 * board) and one copy of luxon (bullmq's; no bundle file inlines another).
 * Every module file is recorded by a load hook (`module.registerHooks`,
 * preloaded with `--import`); with MAGPIE_TTS on the same hook sees the voice
 * code load, and a backup job sees the backup code load and write its archive,
 * so the checks can fail.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadedFiles, writeLoadRecorder } from '../fakes/load-recorder.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { waitFor } from '../fakes/wait-for.js';
import { initedFolder, removeFolder } from '../fakes/workspace.js';
import { BIN, build, daemonEnv, magpie, stop } from './daemon-helpers.js';

let dir: string;
let workspace: string;
let fake: FakeOpenAI;
let recorder: string;

beforeAll(async () => {
  build();
  ({ dir, workspace } = await initedFolder('magpie-worker-loads-'));
  fake = await startFakeOpenAI({ responder: () => ({ content: 'ok' }) });
  recorder = await writeLoadRecorder(dir);
}, 120_000);

afterAll(async () => {
  await fake?.close();
  await removeFolder(dir);
});

/**
 * What a worker process loaded until it was running (and `whileRunning` was done, given its
 * bus prefix): node_modules packages, and the sources inside bundle files.
 */
async function workerLoads(
  extra: Record<string, string>,
  whileRunning?: (prefix: string) => Promise<void>,
): Promise<{ packages: Set<string>; sources: string }> {
  const log = path.join(dir, `worker-${Date.now()}.txt`);
  const env = daemonEnv({
    REDIS_URL: inject('redisUrl'),
    OPENAI_BASE_URL: fake.baseURL,
    MAGPIE_WORKSPACE: workspace,
    ...extra,
  });
  const worker = magpie(['worker'], {
    ...env,
    NODE_OPTIONS: `--import ${recorder}`,
    LOAD_LOG: log,
  });
  try {
    await worker.waitFor(/magpie is running/, 20_000);
    await whileRunning?.(env.MAGPIE_QUEUE_PREFIX as string);
  } finally {
    await stop(worker);
  }
  const files = await loadedFiles(log);
  const packages = new Set<string>();
  for (const file of files) {
    const m = /[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)[\\/]/.exec(file);
    if (m) packages.add(m[1]!.replace('\\', '/'));
  }
  // esbuild marks each inlined file with a `// src/...` or `// node_modules/...` comment line.
  const bundle = path.dirname(path.dirname(BIN));
  let sources = '';
  for (const file of files.filter((f) => f.startsWith(bundle)))
    for (const m of (await readFile(file, 'utf8')).matchAll(/^\/\/ ((?:src|node_modules)\/\S+)$/gm))
      sources += `${m[1]}\n`;
  return { packages, sources };
}

describe('what a worker loads', () => {
  it('no backup, voice or Bull Board code and one luxon by default; the voice code with MAGPIE_TTS on', async () => {
    const off = await workerLoads({});
    // What it does load, so the markers are read right.
    expect(off.packages).toContain('bullmq');
    expect(off.sources).toContain('src/worker/turn-worker.ts');
    for (const unneeded of [
      'tar',
      'age-encryption',
      '@noble/curves',
      '@noble/post-quantum',
      '@bull-board/api',
    ])
      expect(off.packages, `${unneeded} loaded`).not.toContain(unneeded);
    expect(off.sources).not.toMatch(/^src\/backup\//m);
    expect(off.sources).not.toMatch(/^src\/voice\/voice-replies\.ts$/m);
    expect(off.packages).toContain('luxon');
    expect(off.sources).not.toMatch(/^node_modules\/luxon\//m);

    const on = await workerLoads({ MAGPIE_TTS: 'endpoint' });
    expect(on.sources).toMatch(/^src\/voice\/voice-replies\.ts$/m);
  }, 60_000);

  it('a scheduled backup loads the backup code when its job runs, and writes the archive', async () => {
    const backups = path.join(dir, 'backups');
    const loads = await workerLoads(
      { MAGPIE_BACKUP_SCHEDULE: '03:00', MAGPIE_BACKUP_DIR: backups },
      async (prefix) => {
        // The tick the job scheduler would make at 03:00, added now.
        const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
        const queue = new Queue('backup', { connection: redis, prefix });
        try {
          await queue.add('backup', {});
          await waitFor(
            async () => (await readdir(backups).catch(() => [])).some((f) => f.endsWith('.tar.gz')),
            30_000,
            'the backup archive',
          );
        } finally {
          await queue.close();
          redis.disconnect();
        }
      },
    );
    expect(loads.packages).toContain('tar');
    expect(loads.sources).toMatch(/^src\/backup\/schedule\.ts$/m);
  }, 60_000);
});
