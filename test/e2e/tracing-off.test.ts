/**
 * Tracing off costs nothing at start-up (issue 32): without the OTEL_*
 * variables neither `magpie agent -m` nor a worker process loads any
 * OpenTelemetry module, and no bundle file they load imports one. Every module
 * file is recorded by a load hook (`module.registerHooks`, preloaded with
 * `--import`); the same hook sees the SDK load when tracing is on, so the
 * check can fail.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadedFiles, writeLoadRecorder } from '../fakes/load-recorder.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { type OtlpReceiver, startOtlpReceiver } from '../fakes/otlp-receiver.js';
import { initedFolder, removeFolder } from '../fakes/workspace.js';
import { BIN, build, daemonEnv, magpie, stop } from './daemon-helpers.js';

const run = promisify(execFile);

let dir: string;
let workspace: string;
let fake: FakeOpenAI;
let receiver: OtlpReceiver;
let recorder: string;

beforeAll(async () => {
  build();
  ({ dir, workspace } = await initedFolder('magpie-tracing-off-'));
  fake = await startFakeOpenAI({ responder: () => ({ content: 'ok' }) });
  receiver = await startOtlpReceiver();
  recorder = await writeLoadRecorder(dir);
}, 120_000);

afterAll(async () => {
  await fake?.close();
  await receiver?.close();
  await removeFolder(dir);
});

/** The loaded OpenTelemetry files, and the loaded bundle files that import one. */
async function openTelemetryIn(files: string[]): Promise<string[]> {
  const found = files.filter((f) => f.includes(`${path.sep}@opentelemetry${path.sep}`));
  for (const file of files.filter((f) => f.startsWith(path.dirname(path.dirname(BIN)))))
    if ((await readFile(file, 'utf8')).includes('@opentelemetry/')) found.push(file);
  return found;
}

/** The files a worker process loads until it is running. */
async function workerLoads(extra: Record<string, string>): Promise<string[]> {
  const log = path.join(dir, `worker-${Date.now()}.txt`);
  const worker = magpie(['worker'], {
    ...daemonEnv({
      REDIS_URL: inject('redisUrl'),
      OPENAI_BASE_URL: fake.baseURL,
      MAGPIE_WORKSPACE: workspace,
      ...extra,
    }),
    NODE_OPTIONS: `--import ${recorder}`,
    LOAD_LOG: log,
  });
  try {
    await worker.waitFor(/magpie is running/, 20_000);
  } finally {
    await stop(worker);
  }
  return loadedFiles(log);
}

describe('tracing off', () => {
  it('magpie agent -m answers without loading any OpenTelemetry module', async () => {
    const log = path.join(dir, `agent-${Date.now()}.txt`);
    const { stdout } = await run(process.execPath, ['--import', recorder, BIN, 'agent', '-m', 'hi'], {
      cwd: dir,
      env: {
        PATH: process.env.PATH,
        HOME: dir,
        OPENAI_API_KEY: 'sk-e2e-tracing-off',
        OPENAI_BASE_URL: fake.baseURL,
        MAGPIE_WORKSPACE: workspace,
        MAGPIE_EXEC_SANDBOX: 'off',
        LOAD_LOG: log,
      },
    });
    expect(stdout).toBe('ok\n');
    const files = await loadedFiles(log);
    expect(files.length).toBeGreaterThan(3);
    expect(await openTelemetryIn(files)).toEqual([]);
  });

  it('a worker starts without loading any; with OTEL_EXPORTER_OTLP_ENDPOINT set the same hook sees the SDK load', async () => {
    const off = await workerLoads({});
    expect(off.some((f) => f.includes(`${path.sep}bullmq${path.sep}`))).toBe(true);
    expect(await openTelemetryIn(off)).toEqual([]);
    const on = await workerLoads({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint });
    const loaded = await openTelemetryIn(on);
    expect(loaded.some((f) => f.includes(`${path.sep}@opentelemetry${path.sep}sdk-trace${path.sep}`))).toBe(
      true,
    );
  }, 60_000);
});
