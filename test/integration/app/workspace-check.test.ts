/**
 * The workspace check at start-up against a real Redis: the first process
 * records its workspace's id on the bus, a process with another workspace
 * refuses (exit 2, one line saying why and what to do), and a whole role
 * started on the wrong workspace stops before it takes anything.
 */
import { mkdtemp, readdir, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startRole } from '../../../src/app/roles.js';
import { checkWorkspaceIdentity } from '../../../src/app/workspace-check.js';
import { Bus } from '../../../src/bus/bus.js';
import { keys } from '../../../src/bus/keys.js';
import type { Config } from '../../../src/config/index.js';
import { ConfigError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { readWorkspaceId, WORKSPACE_ID_FILE } from '../../../src/workspace/identity.js';
import { testConfig } from '../bus/helpers.js';

let root: string;
let wsA: string;
let wsB: string;
let config: Config;
let bus: Bus;
let redis: Redis;

beforeAll(async () => {
  root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'magpie-wscheck-')));
});
afterAll(() => rm(root, { recursive: true, force: true }));

beforeEach(async () => {
  wsA = await mkdtemp(path.join(root, 'a-'));
  wsB = await mkdtemp(path.join(root, 'b-'));
  config = testConfig();
  bus = await Bus.connect({ config, logger: silentLogger() });
  redis = new Redis(bus.url);
});
afterEach(async () => {
  await bus.close();
  redis.disconnect();
});

const check = (workspace: string) => checkWorkspaceIdentity({ bus, workspace, logger: silentLogger() });

describe('checkWorkspaceIdentity', () => {
  it('gives a workspace made before ids its id and records it on the bus as the first process', async () => {
    expect(await readWorkspaceId(wsA)).toBeUndefined();
    const id = await check(wsA);
    expect(await readWorkspaceId(wsA)).toBe(id);
    expect(await redis.get(keys.workspace(config.redis.prefix))).toBe(id);
    // A second process on the same workspace passes and changes nothing.
    expect(await check(wsA)).toBe(id);
    expect(await redis.get(keys.workspace(config.redis.prefix))).toBe(id);
  });

  it('refuses another workspace with one line naming both ids, the fix and the docs (exit 2)', async () => {
    const a = await check(wsA);
    const err = await check(wsB).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    const { message, exitCode } = err as ConfigError;
    expect(exitCode).toBe(2);
    expect(message).not.toContain('\n');
    const b = await readWorkspaceId(wsB);
    expect(message).toContain(`the workspace ${wsB} (id ${b}) is not the one the bus`);
    expect(message).toContain(`serves (id ${a})`);
    expect(message).toContain('set MAGPIE_WORKSPACE to that workspace');
    expect(message).toContain('docs/DEPLOYMENT.md');
    // The bus keeps the first workspace: the refused one cannot take it over.
    expect(await redis.get(keys.workspace(config.redis.prefix))).toBe(a);
  });

  it('lets exactly one of two workspaces starting at once have the bus', async () => {
    const results = await Promise.allSettled([check(wsA), check(wsB), check(wsA), check(wsB)]);
    const recorded = await redis.get(keys.workspace(config.redis.prefix));
    const winner = recorded === (await readWorkspaceId(wsA)) ? 'a' : 'b';
    const expected = winner === 'a' ? ['fulfilled', 'rejected'] : ['rejected', 'fulfilled'];
    expect(results.map((r) => r.status)).toEqual([...expected, ...expected]);
  });

  it('does not mix buses: another queue prefix on the same Redis records its own workspace', async () => {
    await check(wsA);
    const other = await Bus.connect({ config: testConfig(bus.url), logger: silentLogger() });
    try {
      const b = await checkWorkspaceIdentity({ bus: other, workspace: wsB, logger: silentLogger() });
      expect(await redis.get(keys.workspace(other.prefix))).toBe(b);
    } finally {
      await other.close();
    }
  });
});

describe('startRole on the wrong workspace', () => {
  it('refuses before any part starts, and leaves the workspace and bus as they were', async () => {
    const a = await check(wsA);
    const wrong = { ...config, workspace: wsB };
    const err = await startRole({ role: 'gateway', config: wrong, logger: silentLogger() }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toMatch(/is not the one the bus at .* serves/);
    expect(await redis.get(keys.workspace(config.redis.prefix))).toBe(a);
    // Nothing of the gateway ran: no outbound consumer registered its queue.
    expect(await redis.keys(`${config.redis.prefix}:outbound-*`)).toEqual([]);
    expect(await readdir(wsB)).toEqual([WORKSPACE_ID_FILE]);
  });
});
