/**
 * The remembered bwrap probe: a second start with the same bwrap, kernel and
 * user skips the probe; a stale, corrupt or foreign record is probed again.
 * Runs the real bwrap (npm test installs bubblewrap).
 */
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveSandbox } from '../../../src/tools/sandbox.js';
import { PROBE_MAX_AGE_MS, probeKey, readProbe } from '../../../src/tools/sandbox-probe-cache.js';

let dir: string;
let workspace: string;
let cache: string;

beforeEach(async () => {
  dir = await realpath(await mkdtemp(path.join(tmpdir(), 'magpie-probe-')));
  workspace = path.join(dir, 'ws');
  await mkdir(workspace);
  cache = path.join(dir, 'state', 'sandbox-probe.json');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function resolve() {
  const status = await resolveSandbox('bwrap', { workspace, probeCache: cache });
  if (status.kind !== 'bwrap') throw new Error(`no sandbox: ${status.reason}`);
  return status.sandbox;
}

describe('remembered bwrap probe', () => {
  it('probes once, then trusts the record on the next start', async () => {
    const first = await resolve();
    expect(first.probedBefore).toBe(false);
    const record = JSON.parse(await readFile(cache, 'utf8'));
    expect(record.version).toBe(first.version);
    const second = await resolve();
    expect(second.probedBefore).toBe(true);
    expect(second.version).toBe(first.version);
  });

  it('probes again when the record is corrupt, stale or for another bwrap', async () => {
    await resolve();
    const record = JSON.parse(await readFile(cache, 'utf8'));
    for (const bad of [
      '{not json',
      JSON.stringify({ ...record, at: Date.now() - PROBE_MAX_AGE_MS - 1 }),
      JSON.stringify({ ...record, key: `${record.key}-other` }),
    ]) {
      await writeFile(cache, bad);
      expect((await resolve()).probedBefore).toBe(false);
    }
  });

  it('keys the record by the bwrap binary, the kernel and the user', async () => {
    await resolve();
    const record = JSON.parse(await readFile(cache, 'utf8'));
    expect(record.key).toBe(await probeKey('/usr/bin/bwrap'));
    expect(await readProbe(cache, 'another bwrap')).toBeUndefined();
  });
});
