/**
 * MCP and web_search through the built CLI: `magpie agent` with the fake
 * OpenAI server calling a server-everything tool (stdio, from node_modules)
 * and web_search on a local Brave; an image reaching a vision model but not
 * the session log; a malformed mcp.json, one inside the workspace and a
 * missing command; `magpie mcp` (text, --json, exit codes) and the doctor's
 * lines; and the bundle: nothing of the MCP SDK is reachable from
 * `magpie agent`'s start-up without a dynamic import.
 */
import { execFile, spawn } from 'node:child_process';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { type FakeSearchServer, startFakeSearch } from '../fakes/search-servers.js';
import { initedFolder, removeFolder } from '../fakes/workspace.js';
import { collect, type Outcome, said } from './cli-helpers.js';
import { BIN, build, ROOT } from './daemon-helpers.js';

const _exec = promisify(execFile);
const require = createRequire(import.meta.url);
const EVERYTHING = path.join(
  path.dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist',
  'index.js',
);

let dir: string;
let workspace: string;
let fake: FakeOpenAI;

/** mcp.json text naming server-everything (and more servers when given). */
function mcpJson(extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    mcpServers: { everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] }, ...extra },
  });
}

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: dir,
    OPENAI_API_KEY: 'sk-e2e-mcp-key',
    OPENAI_BASE_URL: fake.baseURL,
    MAGPIE_WORKSPACE: workspace,
    ...extra,
  };
}

/** Runs `magpie <args>` in the temp folder (where mcp.json lies). */
function magpie(args: string[], extraEnv: Record<string, string> = {}): Promise<Outcome> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: dir,
    env: env(extraEnv),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return collect(child);
}

const toolMessage = (req: { body: { messages: { role: string; content: string }[] } }) =>
  req.body.messages.findLast((m) => m.role === 'tool');

beforeAll(async () => {
  build();
  ({ dir, workspace } = await initedFolder('magpie-mcp-e2e-'));
}, 150_000);

afterAll(() => removeFolder(dir));

afterEach(async () => {
  await fake?.close();
  await rm(path.join(dir, 'mcp.json'), { force: true });
});

describe('magpie agent with MCP servers', () => {
  it("calls an MCP tool the model picked from the tool list; the prompt names the server's tools", async () => {
    fake = await startFakeOpenAI();
    fake.enqueue(
      { toolCalls: [{ name: 'everything__echo', arguments: JSON.stringify({ message: 'from the model' }) }] },
      { content: 'The server echoed it.' },
    );
    await writeFile(path.join(dir, 'mcp.json'), mcpJson());
    const out = await magpie(['agent', '-m', 'echo something through MCP']);
    expect(out).toMatchObject({ code: 0, stdout: 'The server echoed it.\n' });
    const first = fake.requests[0]!.body;
    expect(first.tools.map((t: { function: { name: string } }) => t.function.name)).toContain(
      'everything__echo',
    );
    expect(first.messages[0].content).toContain('everything__echo');
    expect(toolMessage(fake.requests[1]!)?.content).toContain('Echo: from the model');
  }, 60_000);

  it('shows an image from a tool to a vision model after the results, and keeps it out of the session log', async () => {
    fake = await startFakeOpenAI();
    fake.enqueue(
      { toolCalls: [{ name: 'everything__get-tiny-image', arguments: '{}' }] },
      { content: 'A logo.' },
    );
    await writeFile(path.join(dir, 'mcp.json'), mcpJson());
    const out = await magpie(['agent', '--chat', 'img', '-m', 'show me the image'], {
      MAGPIE_MODEL: 'gpt-4o',
    });
    expect(out.code).toBe(0);
    const messages = fake.requests[1]!.body.messages as { role: string; content: unknown }[];
    const toolAt = messages.findLastIndex((m) => m.role === 'tool');
    const after = messages[toolAt + 1] as {
      role: string;
      content: { type: string; image_url?: { url: string } }[];
    };
    expect(after.role).toBe('user');
    expect(
      after.content.some((p) => p.type === 'image_url' && p.image_url?.url.startsWith('data:image/png')),
    ).toBe(true);
    const log = await readFile(path.join(workspace, 'sessions', 'cli_img.jsonl'), 'utf8');
    expect(log).toContain('attached after the tool results');
    expect(log).not.toContain('data:image/png;base64');
  }, 60_000);

  it('a server whose command is missing is one warning line; the agent still answers', async () => {
    fake = await startFakeOpenAI({ responder: () => ({ content: 'still here' }) });
    await writeFile(
      path.join(dir, 'mcp.json'),
      mcpJson({ github: { command: 'magpie-no-such-github-mcp' } }),
    );
    const out = await magpie(['agent', '-m', 'hi']);
    expect(out).toMatchObject({ code: 0, stdout: 'still here\n' });
    const warnings = out.stderr.split('\n').filter((l) => l.includes('"github"'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/failed to start: command not found: magpie-no-such-github-mcp/);
    const names = fake.requests[0]!.body.tools.map((t: { function: { name: string } }) => t.function.name);
    expect(names.some((n: string) => n.startsWith('github__'))).toBe(false);
    expect(names).toContain('everything__echo');
  }, 60_000);

  it('a malformed mcp.json stops with exit 2 and one line naming the file', async () => {
    fake = await startFakeOpenAI();
    await writeFile(path.join(dir, 'mcp.json'), '{ "mcpServers": { "a": { "args": [] } } }');
    const out = await magpie(['agent', '-m', 'hi']);
    expect(out.code).toBe(2);
    expect(said(out.stderr)).toHaveLength(1);
    expect(out.stderr).toContain(path.join(dir, 'mcp.json'));
    expect(out.stderr).toMatch(/mcpServers\.a needs "command"/);
    expect(fake.requests).toHaveLength(0);
  });

  it('an mcp.json inside the workspace is refused (exit 2): the agent could write it', async () => {
    fake = await startFakeOpenAI();
    const inside = path.join(workspace, 'mcp.json');
    await writeFile(inside, mcpJson());
    try {
      const out = await magpie(['agent', '-m', 'hi'], { MAGPIE_MCP_CONFIG: inside });
      expect(out.code).toBe(2);
      expect(said(out.stderr)).toHaveLength(1);
      expect(out.stderr).toMatch(/inside the workspace/);
    } finally {
      await rm(inside, { force: true });
    }
  });
});

describe('web_search through magpie agent', () => {
  let brave: FakeSearchServer;
  beforeAll(async () => {
    brave = await startFakeSearch('brave', { key: 'brave-e2e-key' });
  });
  afterAll(async () => {
    await brave?.close();
  });

  it('is offered with a backend, and its results reach the model', async () => {
    fake = await startFakeOpenAI();
    fake.enqueue(
      {
        toolCalls: [
          { name: 'web_search', arguments: JSON.stringify({ query: 'lisbon aquarium opening hours' }) },
        ],
      },
      { content: 'It opens at 10:00.' },
    );
    const out = await magpie(['agent', '--chat', 'search', '-m', 'when does the Lisbon aquarium open?'], {
      BRAVE_API_KEY: 'brave-e2e-key',
      BRAVE_API_ROOT: brave.root,
    });
    expect(out).toMatchObject({ code: 0, stdout: 'It opens at 10:00.\n' });
    expect(fake.requests[0]!.body.messages[0].content).toContain('web_search');
    const result = toolMessage(fake.requests[1]!)?.content ?? '';
    expect(result).toContain('1. Result 1 about lisbon aquarium opening hours');
    expect(result).toContain('<untrusted_web_content');
    expect(JSON.stringify(fake.requests)).not.toContain('brave-e2e-key');
  });

  it('is not offered, and the prompt does not mention it, without a backend', async () => {
    fake = await startFakeOpenAI({ responder: () => ({ content: 'ok' }) });
    const out = await magpie(['agent', '--chat', 'nosearch', '-m', 'hi']);
    expect(out.code).toBe(0);
    const body = fake.requests[0]!.body;
    expect(body.tools.map((t: { function: { name: string } }) => t.function.name)).not.toContain(
      'web_search',
    );
    expect(body.messages[0].content).not.toContain('web_search');
  });
});

describe('magpie mcp and doctor', () => {
  it('lists each server: connected with its tools, or failed and why (exit 1)', async () => {
    fake = await startFakeOpenAI();
    await writeFile(path.join(dir, 'mcp.json'), mcpJson({ ghost: { command: 'magpie-no-such-mcp' } }));
    const out = await magpie(['mcp']);
    expect(out.code).toBe(1);
    expect(out.stdout).toMatch(/✓ everything {2}connected \(stdio: .*\) {2}\d+ tools/);
    expect(out.stdout).toMatch(/ {4}everything__get-sum +Returns the sum of two numbers/);
    expect(out.stdout).toMatch(/✗ ghost {2}failed .*command not found: magpie-no-such-mcp/);
  }, 60_000);

  it('--json gives the same as data; exit 0 when every server connects', async () => {
    fake = await startFakeOpenAI();
    await writeFile(path.join(dir, 'mcp.json'), mcpJson());
    const out = await magpie(['mcp', '--json']);
    expect(out.code).toBe(0);
    const probe = JSON.parse(out.stdout);
    expect(probe).toMatchObject({ file: path.join(dir, 'mcp.json'), exists: true });
    expect(probe.servers[0]).toMatchObject({ name: 'everything', state: 'connected', transport: 'stdio' });
    expect(probe.servers[0].tools).toContainEqual(
      expect.objectContaining({ name: 'echo', modelName: 'everything__echo' }),
    );
  }, 60_000);

  it('without mcp.json says so and exits 0; a malformed one exits 2', async () => {
    fake = await startFakeOpenAI();
    const none = await magpie(['mcp']);
    expect(none).toMatchObject({ code: 0 });
    expect(none.stdout).toMatch(/No MCP servers: .*mcp\.json does not exist/);
    await writeFile(path.join(dir, 'mcp.json'), '{ "mcpServers": ');
    const bad = await magpie(['mcp']);
    expect(bad.code).toBe(2);
    expect(said(bad.stderr)).toHaveLength(1);
    expect(bad.stderr).toMatch(/is not valid JSON/);
  });

  it('doctor has a line per MCP server and one for the search backend', async () => {
    fake = await startFakeOpenAI();
    const brave = await startFakeSearch('brave', { key: 'brave-doctor-key' });
    try {
      await writeFile(path.join(dir, 'mcp.json'), mcpJson({ ghost: { command: 'magpie-no-such-mcp' } }));
      const out = await magpie(['doctor'], { BRAVE_API_KEY: 'brave-doctor-key', BRAVE_API_ROOT: brave.root });
      expect(out.stdout).toMatch(/✓ mcp +everything: connected over stdio, \d+ tools/);
      expect(out.stdout).toMatch(/✗ mcp +ghost: command not found: magpie-no-such-mcp/);
      expect(out.stdout).toMatch(/fix: install it, or fix "command" of ghost/);
      expect(out.stdout).toMatch(/✓ web search +Brave Search answered/);
      const refused = await magpie(['doctor'], {
        BRAVE_API_KEY: 'wrong-brave-key',
        BRAVE_API_ROOT: brave.root,
      });
      expect(refused.stdout).toMatch(/✗ web search +Brave Search refused the credentials \(HTTP 401\)/);
      expect(refused.stdout).not.toContain('wrong-brave-key');
    } finally {
      await brave.close();
    }
  }, 90_000);
});

describe('the bundle', () => {
  it("keeps the MCP SDK and the bus out of magpie agent's start-up: only a dynamic import reaches them", async () => {
    const chunks = path.join(ROOT, 'dist', 'chunks');
    const files = await readdir(chunks);
    const agentChunk = files.find((f) => /^agent-[A-Z0-9]+\.js$/.test(f));
    expect(agentChunk).toBeDefined();
    const staticImports = (text: string) =>
      [...text.matchAll(/(?:^|[;\n])\s*import\s*(?:[^'"();]*?\sfrom\s*)?["'](\.\/[^"']+)["']/g)].map(
        (m) => m[1]!,
      );
    const seen = new Set<string>();
    const queue = [agentChunk!];
    while (queue.length > 0) {
      const file = queue.shift()!;
      if (seen.has(file)) continue;
      seen.add(file);
      const text = await readFile(path.join(chunks, file), 'utf8');
      expect(text, `${file} holds MCP SDK code`).not.toContain('Streamable HTTP error');
      expect(text, `${file} imports the MCP SDK`).not.toContain('@modelcontextprotocol');
      // Nor the bus: magpie agent never talks to Redis, so bullmq and ioredis stay out of its start-up.
      expect(text, `${file} imports bullmq or ioredis`).not.toMatch(/from\s*["'](bullmq|ioredis)["']/);
      for (const next of staticImports(text)) queue.push(path.basename(next));
    }
    const sdkChunks = [];
    for (const f of files) {
      if ((await readFile(path.join(chunks, f), 'utf8')).includes('Streamable HTTP error')) sdkChunks.push(f);
    }
    expect(sdkChunks.length).toBeGreaterThan(0);
    expect(sdkChunks.some((f) => seen.has(f))).toBe(false);
  });
});
