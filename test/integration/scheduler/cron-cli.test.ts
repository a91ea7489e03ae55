import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { createCronTool } from '../../../src/tools/cron.js';
import { fixtureProcessEnv, schedulerFixturePerTest, testConfig, toolContext } from './helpers.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const BIN = path.join(ROOT, 'src/main.ts');
const TSX = import.meta.resolve('tsx');

describe('magpie cron list / remove (subprocess, real Redis)', () => {
  const fx = schedulerFixturePerTest();

  const magpie = async (...args: string[]) => {
    try {
      const { stdout, stderr } = await promisify(execFile)(
        process.execPath,
        ['--import', TSX, BIN, 'cron', ...args],
        {
          cwd: fx.workspace,
          env: fixtureProcessEnv(fx),
        },
      );
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };

  it("lists every chat's tasks with schedule, next run in its zone, mode and message; removes by id", async () => {
    const config = testConfig(inject('redisUrl'), fx.prefix, fx.workspace);
    const tool = createCronTool({ store: fx.store, config });
    const a = await tool.execute(
      {
        action: 'add',
        message: 'send my calendar summary',
        cron: '0 8 * * 1-5',
        tz: 'Europe/Lisbon',
        mode: 'agent',
      },
      toolContext('telegram', '111', fx.workspace),
    );
    const b = await tool.execute(
      { action: 'add', message: 'ask about the report', at: '2099-12-01T09:00', tz: 'Asia/Tokyo' },
      toolContext('discord', '222', fx.workspace),
    );
    const idA = /task ([a-z0-9]+)/.exec(a.forLLM)![1]!;
    const idB = /reminder ([a-z0-9]+)/.exec(b.forLLM)![1]!;

    const list = await magpie('list');
    expect(list.code).toBe(0);
    const lineA = list.stdout.split('\n').find((l) => l.startsWith(idA))!;
    expect(lineA).toMatch(
      /telegram:111 .*cron "0 8 \* \* 1-5" \(Europe\/Lisbon\).* 08:00 Europe\/Lisbon .*AGENT \(full turn with tools\) .*send my calendar summary/,
    );
    const lineB = list.stdout.split('\n').find((l) => l.startsWith(idB))!;
    expect(lineB).toMatch(/discord:222 .*Tue 1 Dec 2099 09:00 Asia\/Tokyo .*remind .*ask about the report/);

    const json = JSON.parse((await magpie('list', '--json')).stdout);
    expect(json).toHaveLength(2);

    const removed = await magpie('remove', idB);
    expect(removed).toMatchObject({ code: 0, stdout: `Removed scheduled task ${idB}.\n` });
    const missing = await magpie('remove', idB);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`no scheduled task "${idB}"`);
    expect((await magpie('list')).stdout).not.toContain(idB);
  }, 60_000);

  it('rejects bad usage with exit 2', async () => {
    const bad = await magpie('frobnicate');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/say "list" or "remove <id>"/);
  }, 30_000);
});
