/**
 * mcp.json: the Claude Desktop format with comments, `${VAR}` expansion,
 * one clear ConfigError line (exit 2) for every malformed file, and the rule
 * that the file may not be reachable from the workspace (directly, through a
 * symlink, or as a hard link).
 */
import { link, mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, ExitCode } from '../../../src/errors/index.js';
import { loadMcpConfig } from '../../../src/mcp/config.js';
import { tempDir } from '../tools/helpers.js';

let dir: string;
let workspace: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('magpie-mcp-config-'));
  workspace = path.join(dir, 'workspace');
  await mkdir(workspace);
});
afterEach(async () => {
  await cleanup();
});

async function load(text: string, env: NodeJS.ProcessEnv = {}, file = path.join(dir, 'mcp.json')) {
  await writeFile(file, text);
  return loadMcpConfig({ file, workspace, env });
}

/** The ConfigError a load throws (fails the test when it does not throw one). */
async function refusal(text: string, env: NodeJS.ProcessEnv = {}): Promise<ConfigError> {
  const err = await load(text, env).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  return err as ConfigError;
}

describe('loadMcpConfig', () => {
  it('returns undefined when there is no file (no MCP at all)', async () => {
    expect(await loadMcpConfig({ file: path.join(dir, 'mcp.json'), workspace, env: {} })).toBeUndefined();
  });

  it('reads the issue example with comments and trailing commas', async () => {
    const config = await load(
      `// mcp.json beside .env
      { "mcpServers": {
          "files":  { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"] },
          /* a token from the environment */
          "github": { "command": "github-mcp", "env": { "GITHUB_TOKEN": "\${GITHUB_TOKEN}" } },
          "notes":  { "url": "http://127.0.0.1:8808/mcp", "headers": { "Authorization": "Bearer \${NOTES_TOKEN}" } },
      } }`,
      { GITHUB_TOKEN: 'ghp_secret_token', NOTES_TOKEN: 'notes-token-1' },
    );
    expect(config?.servers.map((s) => s.name)).toEqual(['files', 'github', 'notes']);
    expect(config?.servers[0]).toMatchObject({
      transport: 'stdio',
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv/notes'],
      display: 'npx -y @modelcontextprotocol/server-filesystem /srv/notes',
    });
    expect(config?.servers[1]).toMatchObject({ env: { GITHUB_TOKEN: 'ghp_secret_token' } });
    expect(config?.servers[1]?.secrets).toContain('ghp_secret_token');
    expect(config?.servers[2]).toMatchObject({
      transport: 'http',
      url: 'http://127.0.0.1:8808/mcp',
      headers: { Authorization: 'Bearer notes-token-1' },
      sseFallback: true,
    });
    expect(config?.servers[2]?.secrets).toEqual(
      expect.arrayContaining(['notes-token-1', 'Bearer notes-token-1']),
    );
  });

  it('keeps "//" inside strings (URLs) and supports a fallback value', async () => {
    const config = await load(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: mcp.json's own ${VAR} syntax
      '{ "mcpServers": { "web": { "url": "https://mcp.example.org/${MCP_PATH:-v1}", "type": "sse" } } }',
    );
    expect(config?.servers[0]).toMatchObject({
      url: 'https://mcp.example.org/v1',
      transport: 'sse',
      sseFallback: false,
    });
  });

  it('marks a server whose variable is unset as unable to start, naming the variable', async () => {
    const config = await load(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: mcp.json's own ${VAR} syntax
      '{ "mcpServers": { "gh": { "command": "gh-mcp", "env": { "T": "${GH_TOKEN}" } } } }',
    );
    expect(config?.servers[0]?.problem).toMatch(/\$\{GH_TOKEN\} is not set/);
  });

  it('leaves out disabled servers and resolves cwd from the file folder', async () => {
    const config = await load(
      '{ "mcpServers": { "off": { "command": "x", "disabled": true }, "on": { "command": "y", "cwd": "tools" } } }',
    );
    expect(config?.servers.map((s) => s.name)).toEqual(['on']);
    expect(config?.servers[0]).toMatchObject({ cwd: path.join(dir, 'tools') });
  });

  it('turns user:password in a URL into a Basic header and keeps it out of what is shown', async () => {
    const config = await load('{ "mcpServers": { "n": { "url": "https://bob:s3cret-pw@mcp.lan/mcp" } } }');
    const spec = config?.servers[0];
    expect(spec).toMatchObject({ url: 'https://mcp.lan/mcp', display: 'https://mcp.lan/mcp' });
    expect(spec?.transport === 'http' && spec.headers.Authorization).toBe(
      `Basic ${Buffer.from('bob:s3cret-pw').toString('base64')}`,
    );
    expect(spec?.secrets).toContain('s3cret-pw');
  });

  it.each([
    ['{ "mcpServers": { "a": { "command": "x" } ', /is not valid JSON/],
    ['[1, 2]', /must hold a JSON object/],
    ['{ "servers": {} }', /has no "mcpServers" object/],
    ['{ "mcpServers": [] }', /"mcpServers" must be an object/],
    ['{ "mcpServers": { "a": {} } }', /mcpServers\.a needs "command" .* or "url"/],
    ['{ "mcpServers": { "a": { "command": "" } } }', /mcpServers\.a\.command must name a program/],
    [
      '{ "mcpServers": { "a": { "command": "x", "args": "-y" } } }',
      /mcpServers\.a\.args must be a list of strings/,
    ],
    [
      '{ "mcpServers": { "a": { "command": "x", "env": { "K": 1 } } } }',
      /mcpServers\.a\.env\.K must be a string/,
    ],
    ['{ "mcpServers": { "a": { "url": "not a url" } } }', /mcpServers\.a\.url is not a URL/],
    ['{ "mcpServers": { "a": { "url": "ftp://x/y" } } }', /mcpServers\.a\.url must be http\(s\)/],
    ['{ "mcpServers": { "a": { "url": "http://x", "type": "ws" } } }', /mcpServers\.a\.type must be "http"/],
  ])('refuses %s with one line naming the file', async (text, pattern) => {
    const err = await refusal(text);
    expect(err.message).toMatch(pattern);
    expect(err.message).toContain(path.join(dir, 'mcp.json'));
    expect(err.message.split('\n')).toHaveLength(1);
    expect(err.exitCode).toBe(ExitCode.config);
  });

  it('says where invalid JSON breaks', async () => {
    const err = await refusal('{\n  "mcpServers": {\n    "a": { "command": "x" }\n    "b": {}\n  }\n}');
    expect(err.message).toMatch(/line 4/);
  });

  it('refuses a file inside the workspace, where the agent could add a server', async () => {
    const err = await load('{ "mcpServers": {} }', {}, path.join(workspace, 'mcp.json')).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/inside the workspace/);
  });

  it('refuses a file outside that is a symlink into the workspace', async () => {
    await writeFile(path.join(workspace, 'real.json'), '{ "mcpServers": {} }');
    await symlink(path.join(workspace, 'real.json'), path.join(dir, 'mcp.json'));
    const err = await loadMcpConfig({ file: path.join(dir, 'mcp.json'), workspace, env: {} }).catch((e) => e);
    expect((err as Error).message).toMatch(/inside the workspace/);
  });

  it('refuses a file reached through a symlinked folder into the workspace', async () => {
    await mkdir(path.join(workspace, 'conf'));
    await writeFile(path.join(workspace, 'conf', 'mcp.json'), '{ "mcpServers": {} }');
    await symlink(path.join(workspace, 'conf'), path.join(dir, 'conf'));
    const err = await loadMcpConfig({ file: path.join(dir, 'conf', 'mcp.json'), workspace, env: {} }).catch(
      (e) => e,
    );
    expect((err as Error).message).toMatch(/inside the workspace/);
  });

  it('refuses a file with another hard link (which could sit in the workspace)', async () => {
    await writeFile(path.join(dir, 'mcp.json'), '{ "mcpServers": {} }');
    await link(path.join(dir, 'mcp.json'), path.join(workspace, 'copy.json'));
    const err = await loadMcpConfig({ file: path.join(dir, 'mcp.json'), workspace, env: {} }).catch((e) => e);
    expect((err as Error).message).toMatch(/hard links/);
  });
});
