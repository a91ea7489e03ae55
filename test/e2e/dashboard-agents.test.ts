/**
 * `magpie dashboard` with agents.json (the built CLI): it connects one bus
 * per agent, so `?agent=work` reads work's prefix and workspace, `/metrics`
 * has a line per agent, and it stops cleanly on SIGTERM (every bus closed);
 * a bad agents.json is exit 2 with one line naming the field.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { silentLogger } from '../../src/log/index.js';
import { JsonlSessionStore } from '../../src/sessions/jsonl-store.js';
import { stopProcsThenFake } from '../fakes/daemon.js';
import { build, daemonEnv, magpie, type Proc } from './daemon-helpers.js';

describe('magpie dashboard with two agents', () => {
  let root: string;
  let env: NodeJS.ProcessEnv;
  let dashboard: Proc | undefined;
  let base: string;
  let token: string;
  const get = (url: string) => fetch(new URL(url, base), { headers: { authorization: `Bearer ${token}` } });

  beforeAll(async () => {
    build();
    root = mkdtempSync(path.join(os.tmpdir(), 'magpie-dash-agents-'));
    const mainWs = path.join(root, 'main');
    const workWs = path.join(root, 'work');
    for (const dir of [mainWs, workWs]) mkdirSync(dir, { recursive: true });
    const logger = silentLogger();
    await new JsonlSessionStore({ dir: path.join(mainWs, 'sessions'), logger }).append('cli:main-only', {
      role: 'user',
      content: 'for main',
    });
    await new JsonlSessionStore({ dir: path.join(workWs, 'sessions'), logger }).append('cli:work-only', {
      role: 'user',
      content: 'for work',
    });
    const agentsFile = path.join(root, 'agents.json');
    writeFileSync(agentsFile, JSON.stringify({ agents: [{ id: 'work', workspace: 'work' }] }));
    env = daemonEnv({
      REDIS_URL: inject('redisUrl'),
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      MAGPIE_WORKSPACE: mainWs,
      MAGPIE_AGENTS_CONFIG: agentsFile,
      MAGPIE_STATE_DIR: path.join(root, 'state'),
    });
    dashboard = magpie(['dashboard', '--port', '0'], env);
    const printed = /magpie dashboard: (http:\/\/127\.0\.0\.1:\d+\/) \(sign in with the token in (\/\S+)\)\n/;
    await dashboard.waitFor(printed, 15_000);
    const [, url, tokenFile] = printed.exec(dashboard.stdout()) as RegExpExecArray;
    base = url as string;
    token = readFileSync(tokenFile as string, 'utf8').trim();
  }, 120_000);

  afterAll(async () => {
    await stopProcsThenFake([dashboard], undefined);
  });

  it("reads each agent's prefix and workspace", async () => {
    const work = (await (await get('/api/overview?agent=work')).json()) as { status: { prefix: string } };
    expect(work.status.prefix).toBe(`${env.MAGPIE_QUEUE_PREFIX}-agent-work`);
    const sessions = await (await get('/sessions?agent=work')).text();
    expect(sessions).toContain('cli:work-only');
    expect(sessions).not.toContain('cli:main-only');
    expect(await (await get('/sessions')).text()).toContain('cli:main-only');
    expect((await get('/?agent=play')).status).toBe(404);
  });

  it('has a line per agent in /metrics', async () => {
    const text = await (await get('/metrics')).text();
    expect(text).toMatch(/^magpie_workers_alive\{agent="main"\} 0$/m);
    expect(text).toMatch(/^magpie_workers_alive\{agent="work"\} 0$/m);
  });

  it('closes every bus and exits 0 on SIGTERM', async () => {
    const proc = dashboard as Proc;
    proc.child.kill('SIGTERM');
    expect(await proc.exited).toBe(0);
    dashboard = undefined;
  });

  it('refuses a bad agents.json with exit 2 and one line naming the field', async () => {
    const bad = path.join(root, 'bad-agents.json');
    writeFileSync(bad, '{ "agents": [ { "id": "Work!" } ] }');
    const proc = magpie(['dashboard', '--port', '0'], { ...env, MAGPIE_AGENTS_CONFIG: bad });
    expect(await proc.exited).toBe(2);
    expect(proc.stderr()).toMatch(/bad-agents\.json: agents\[0\]\.id: /);
    expect(proc.stderr().trim().split('\n')).toHaveLength(1);
  });
});
