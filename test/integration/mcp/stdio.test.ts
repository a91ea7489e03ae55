/**
 * MCP over stdio with a real server from npm (@modelcontextprotocol/server-everything,
 * run from node_modules, never downloaded): the tool list as the model sees
 * it, echo, get-sum, an image, a tool error, the server's environment holding
 * none of magpie's secrets, a killed server restarted (calls during the
 * outage get a clear error), a missing command, and no child left after close.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StdioServerSpec } from '../../../src/mcp/config.js';
import { McpManager } from '../../../src/mcp/manager.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { capturingLogger } from '../../fakes/logger.js';
import { alive } from '../../fakes/process.js';
import { waitFor } from '../../fakes/wait-for.js';
import { toolContext } from '../../unit/tools/helpers.js';

const require = createRequire(import.meta.url);
const EVERYTHING = path.join(
  path.dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist',
  'index.js',
);

/** magpie's environment as the manager sees it: secrets a server must never get. */
const MAGPIE_ENV: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: '/home/magpie-test',
  LANG: 'C.UTF-8',
  TZ: 'Europe/Lisbon',
  USER: 'magpie',
  SHELL: '/bin/bash',
  OPENAI_API_KEY: 'sk-magpie-openai-secret',
  TELEGRAM_BOT_TOKEN: '123456:telegram-secret-token',
  DISCORD_BOT_TOKEN: 'discord-secret-token',
  BRAVE_API_KEY: 'brave-secret-key',
  REDIS_URL: 'redis://:redis-pass@127.0.0.1:6379',
};

function everything(name = 'everything', env: Record<string, string> = {}): StdioServerSpec {
  return {
    name,
    transport: 'stdio',
    display: 'server-everything',
    command: process.execPath,
    args: [EVERYTHING, 'stdio'],
    env,
    secrets: [],
  };
}

const managers: McpManager[] = [];
afterEach(async () => {
  for (const m of managers.splice(0)) await m.close();
});

async function started(servers: StdioServerSpec[], vision = false) {
  const { logger, lines } = capturingLogger();
  const manager = new McpManager({ servers, logger, env: MAGPIE_ENV, vision, retryInitialMs: 200 });
  managers.push(manager);
  await manager.start(30_000);
  const registry = new ToolRegistry([], { secrets: ['sk-magpie-openai-secret'] });
  manager.attach(registry);
  return { manager, registry, lines };
}

const call = (registry: ToolRegistry, name: string, args: object = {}) =>
  registry.execute(name, JSON.stringify(args), toolContext('/tmp'));

describe('MCP over stdio (server-everything)', () => {
  it('offers the server tools as everything__<tool> with their descriptions and schemas', async () => {
    const { registry, manager } = await started([everything()]);
    expect(manager.statuses()[0]).toMatchObject({ state: 'connected', transport: 'stdio' });
    expect(registry.names()).toEqual(expect.arrayContaining(['everything__echo', 'everything__get-sum']));
    const sum = registry.definitions().find((d) => d.name === 'everything__get-sum');
    expect(sum?.description).toMatch(/sum of two numbers/i);
    expect(sum?.parameters).toMatchObject({ type: 'object', required: ['a', 'b'] });
    expect(sum?.parameters).not.toHaveProperty('$schema');
  });

  it('calls echo and get-sum; the output is marked untrusted', async () => {
    const { registry } = await started([everything()]);
    const echo = await call(registry, 'everything__echo', { message: 'hello magpie' });
    expect(echo.forLLM).toContain('Echo: hello magpie');
    expect(echo.forLLM).toContain('<untrusted_mcp_output server="everything" tool="echo">');
    const sum = await call(registry, 'everything__get-sum', { a: 2, b: 40 });
    expect(sum.forLLM).toContain('42');
    expect(sum.isError).toBeUndefined();
  });

  it('returns the image as an image part for a vision model', async () => {
    const { registry } = await started([everything()], true);
    const result = await call(registry, 'everything__get-tiny-image');
    expect(result.images?.[0]?.url).toMatch(/^data:image\/png;base64,/);
    expect(result.forLLM).toContain('attached after the tool results');
  });

  it('turns a tool error (arguments the server refuses) into an error result', async () => {
    const { registry } = await started([everything()]);
    const result = await call(registry, 'everything__get-sum', { a: 'two', b: 3 });
    expect(result.isError).toBe(true);
    expect(result.forLLM).toMatch(/^Error/);
    expect(result.forLLM).toMatch(/expected number/i);
  });

  it("gives the server PATH, HOME, LANG, TZ and its own env — none of magpie's secrets", async () => {
    const { registry } = await started([everything('everything', { SERVER_SETTING: 'given-by-mcp-json' })]);
    const result = await call(registry, 'everything__get-env');
    const json = result.forLLM.slice(result.forLLM.indexOf('{'), result.forLLM.lastIndexOf('}') + 1);
    const env = JSON.parse(json) as Record<string, string>;
    expect(env).toMatchObject({
      PATH: process.env.PATH,
      HOME: '/home/magpie-test',
      LANG: 'C.UTF-8',
      TZ: 'Europe/Lisbon',
      SERVER_SETTING: 'given-by-mcp-json',
    });
    for (const name of [
      'OPENAI_API_KEY',
      'TELEGRAM_BOT_TOKEN',
      'DISCORD_BOT_TOKEN',
      'BRAVE_API_KEY',
      'REDIS_URL',
      'USER',
      'SHELL',
    ]) {
      expect(env).not.toHaveProperty(name);
    }
    for (const secret of [
      'sk-magpie-openai-secret',
      'telegram-secret-token',
      'discord-secret-token',
      'redis-pass',
    ]) {
      expect(result.forLLM).not.toContain(secret);
    }
  });

  it('restarts a killed server; a call during the outage gets a clear error, later calls work', async () => {
    const { registry, manager, lines } = await started([everything()]);
    const pid = manager.statuses()[0]?.pid;
    expect(pid).toBeGreaterThan(0);
    process.kill(pid!, 'SIGKILL');
    await waitFor(() => manager.statuses()[0]?.state === 'restarting', 10_000, 'the server seen as lost');
    const during = await call(registry, 'everything__echo', { message: 'anyone?' });
    expect(during.isError).toBe(true);
    expect(during.forLLM).toMatch(/MCP server "everything" is restarting/);
    expect(registry.names()).toContain('everything__echo');
    const back = await waitFor(
      () => {
        const s = manager.statuses()[0];
        return s?.state === 'connected' && s.pid !== pid ? s : undefined;
      },
      20_000,
      'the server restarted',
    );
    expect(alive(pid!)).toBe(false);
    expect(back.pid).not.toBe(pid);
    expect((await call(registry, 'everything__echo', { message: 'back' })).forLLM).toContain('Echo: back');
    expect(lines.some((l) => l.level === 40 && /"everything" lost/.test(l.msg))).toBe(true);
  });

  it('a missing command is one warning naming the server and why; its tools are absent', async () => {
    const ghost: StdioServerSpec = { ...everything('ghost'), command: 'magpie-no-such-mcp-server', args: [] };
    const { registry, manager, lines } = await started([ghost, everything()]);
    expect(manager.statuses()[0]).toMatchObject({
      name: 'ghost',
      state: 'failed',
      error: expect.stringMatching(/command not found: magpie-no-such-mcp-server/),
    });
    expect(registry.names().some((n) => n.startsWith('ghost__'))).toBe(false);
    expect(registry.names()).toContain('everything__echo');
    const warnings = lines.filter((l) => l.level === 40 && l.msg.includes('"ghost"'));
    expect(warnings[0]?.msg).toMatch(/"ghost" failed to start: command not found.*retrying in \d+ s/);
  });

  it('keeps retrying a failed server in the background, warning once per reason', async () => {
    const ghost: StdioServerSpec = { ...everything('ghost'), command: 'magpie-no-such-mcp-server', args: [] };
    const { manager, lines } = await started([ghost]);
    await waitFor(() => (manager.statuses()[0]?.attempts ?? 0) >= 3, 15_000, 'three attempts');
    expect(lines.filter((l) => l.level === 40 && l.msg.includes('"ghost"'))).toHaveLength(1);
  });

  it('leaves no child process behind after close', async () => {
    const { manager } = await started([everything()]);
    const pid = manager.statuses()[0]?.pid;
    expect(alive(pid!)).toBe(true);
    await manager.close();
    expect(alive(pid!)).toBe(false);
    expect(manager.statuses()[0]?.state).toBe('closed');
  });
});
