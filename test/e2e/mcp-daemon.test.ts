/**
 * MCP through the daemon: `magpie gateway` and two `magpie worker` processes
 * on a real Redis, each connecting the servers of mcp.json at start (our own
 * Streamable HTTP server and server-everything over stdio). Chats sent with
 * `magpie send` use both servers' tools whichever worker takes them; when the
 * workers stop, their stdio servers stop with them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type FakeMcpServer, startFakeMcpServer } from '../fakes/mcp-http-server.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { alive } from '../fakes/process.js';
import { build, daemonEnv, magpie, type Proc, stop, tempWorkspace } from './daemon-helpers.js';

const require = createRequire(import.meta.url);
const EVERYTHING = path.join(
  path.dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist',
  'index.js',
);

/** Process ids whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

describe('MCP in the daemon (gateway + two workers)', () => {
  let fake: FakeOpenAI;
  let notes: FakeMcpServer;
  let env: NodeJS.ProcessEnv;
  const procs: Proc[] = [];

  beforeAll(async () => {
    build();
    fake = await startFakeOpenAI();
    notes = await startFakeMcpServer();
    const workspace = tempWorkspace();
    const config = path.join(path.dirname(workspace), 'mcp.json');
    await writeFile(
      config,
      JSON.stringify({
        mcpServers: {
          // biome-ignore lint/suspicious/noTemplateCurlyInString: mcp.json's own ${VAR} syntax
          notes: { url: notes.url, headers: { Authorization: 'Bearer ${NOTES_TOKEN}' } },
          everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
        },
      }),
    );
    env = daemonEnv({
      REDIS_URL: inject('redisUrl'),
      OPENAI_BASE_URL: fake.baseURL,
      MAGPIE_WORKSPACE: workspace,
      MAGPIE_MCP_CONFIG: config,
      NOTES_TOKEN: 'daemon-notes-token',
      // The servers' tools are not marked read-only: with approvals on they would ask.
      MAGPIE_APPROVAL: 'off',
    });
  }, 120_000);

  afterAll(async () => {
    for (const p of procs.splice(0)) await stop(p, 'SIGKILL');
    await notes?.close();
    await fake?.close();
  });

  it('both workers connect the servers; chats use their tools; stopping a worker ends its stdio server', async () => {
    const gateway = magpie(['gateway'], env);
    const workers = [magpie(['worker'], env), magpie(['worker'], env)];
    procs.push(gateway, ...workers);
    await Promise.all([gateway, ...workers].map((p) => p.waitFor(/magpie is running/, 60_000)));
    for (const w of workers) {
      expect(w.stderr()).toMatch(/mcp server \\"notes\\" connected/);
      expect(w.stderr()).toMatch(/mcp server \\"everything\\" connected/);
    }
    const stdioChildren = workers.map((w) => childrenOf(w.child.pid!));
    for (const pids of stdioChildren) expect(pids.length).toBeGreaterThanOrEqual(1);

    fake.setResponder((req) => {
      const messages = req.body.messages as { role: string; content: string }[];
      const last = messages.at(-1)!;
      if (last.role === 'tool')
        return { content: `tool said: ${last.content.split('\n').slice(2, 3).join('')}` };
      const text = String(last.content);
      if (text.includes('add')) return { toolCalls: [{ name: 'notes__add', arguments: '{"a":20,"b":22}' }] };
      return { toolCalls: [{ name: 'everything__echo', arguments: '{"message":"via stdio"}' }] };
    });
    const sends = [
      magpie(['send', '-m', 'please add', '--chat', 'mcp-a', '--timeout', '40s'], env),
      magpie(['send', '-m', 'please echo', '--chat', 'mcp-b', '--timeout', '40s'], env),
    ];
    procs.push(...sends);
    expect(await sends[0]!.exited).toBe(0);
    expect(await sends[1]!.exited).toBe(0);
    expect(sends[0]!.stdout().trim()).toBe('tool said: 42');
    expect(sends[1]!.stdout().trim()).toBe('tool said: Echo: via stdio');
    expect(notes.calls).toContainEqual({ tool: 'add', args: { a: 20, b: 22 } });
    expect(notes.headers.every((h) => h.authorization === 'Bearer daemon-notes-token')).toBe(true);

    for (const w of workers) w.child.kill('SIGTERM');
    for (const w of workers) expect(await w.exited).toBe(0);
    for (const pid of stdioChildren.flat())
      expect(alive(pid), `stdio server ${pid} outlived its worker`).toBe(false);
  }, 150_000);
});
