/**
 * `magpie doctor`'s "workspace id" check on real Redis: passes before the
 * workspace has an id or the bus a record, and when they match; fails with
 * the fix when the bus serves another workspace or the id file is damaged.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { claimWorkspace } from '../../../src/bus/workspace-record.js';
import type { Config } from '../../../src/config/index.js';
import type { CheckResult } from '../../../src/ops/doctor.js';
import { DoctorRedis, workspaceIdentityCheck } from '../../../src/ops/doctor-redis.js';
import { ensureWorkspaceId, WORKSPACE_ID_FILE } from '../../../src/workspace/identity.js';
import { testConfig } from '../bus/helpers.js';

let workspace: string;
let config: Config;
let shared: DoctorRedis;

beforeEach(async () => {
  workspace = await mkdtemp(path.join(os.tmpdir(), 'magpie-doctor-id-'));
  config = { ...testConfig(), workspace };
  shared = new DoctorRedis();
  shared.redis = new Redis(inject('redisUrl'));
});
afterEach(async () => {
  shared.close();
  await rm(workspace, { recursive: true, force: true });
});

const run = async () =>
  (await workspaceIdentityCheck(config, shared).run(new AbortController().signal)) as CheckResult;

describe('doctor: workspace id', () => {
  it('is skipped without a Redis connection', async () => {
    shared.close();
    shared.redis = undefined;
    expect((await run()).status).toBe('skip');
  });

  it('passes before the workspace has an id, and before the bus recorded one', async () => {
    expect(await run()).toEqual({
      status: 'ok',
      detail: 'none yet: the first start gives the workspace its id',
    });
    const { id } = await ensureWorkspaceId(workspace);
    expect(await run()).toEqual({
      status: 'ok',
      detail: `${id} (not on the bus yet: the first start records it)`,
    });
  });

  it('passes when the bus serves this workspace', async () => {
    const { id } = await ensureWorkspaceId(workspace);
    await claimWorkspace(shared.redis as Redis, config.redis.prefix, id);
    expect(await run()).toEqual({ status: 'ok', detail: `${id}, the one the bus serves` });
  });

  it('fails with the fix when the bus serves another workspace', async () => {
    const { id } = await ensureWorkspaceId(workspace);
    const other = '00000000-0000-4000-8000-000000000000';
    await claimWorkspace(shared.redis as Redis, config.redis.prefix, other);
    const result = await run();
    expect(result.status).toBe('fail');
    expect(result.detail).toBe(
      `this workspace is ${id}, but the bus (prefix "${config.redis.prefix}") serves ${other}: workers here refuse to start`,
    );
    expect(result.fix).toContain('set MAGPIE_WORKSPACE to the workspace the bus serves');
  });

  it('fails when the id file is damaged', async () => {
    await writeFile(path.join(workspace, WORKSPACE_ID_FILE), 'garbage\n');
    const result = await run();
    expect(result.status).toBe('fail');
    expect(result.detail).toContain('does not hold a workspace id');
  });
});
