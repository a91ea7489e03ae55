/**
 * The tool catalog: every built-in tool is described once, with whether it
 * only reads, and is built only when the composition gives what it needs.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { createMcpTool } from '../../../src/mcp/tool-adapter.js';
import { buildTools, TOOL_CATALOG, type ToolDeps } from '../../../src/tools/catalog.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { CORE_TOOL_NAMES, tempDir } from './helpers.js';

/** Each built-in tool and whether it only reads. */
const BUILT_IN: Record<string, boolean> = {
  read_file: true,
  list_dir: true,
  memory_search: true,
  web_search: true,
  web_fetch: true,
  load_skill: true,
  write_file: false,
  edit_file: false,
  append_file: false,
  exec: false,
  message: false,
  cron: false,
  spawn: false,
  subagent: false,
  ask_agent: true,
};

describe('the tool catalog', () => {
  let ws: string;
  let cleanup: () => Promise<void>;
  beforeEach(async () => {
    ({ dir: ws, cleanup } = await tempDir());
  });
  afterEach(() => cleanup());

  /** Every need met, with small in-memory stand-ins for the stores and runners. */
  const everything = (): ToolDeps => ({
    workspace: ws,
    searchBackend: { label: 'test search', search: async () => [] },
    memoryIndex: { search: async () => ({ hits: [], total: 0 }) as never },
    skills: { load: async () => undefined as never },
    helpers: { maxDepth: 2, run: async () => ({ ok: true, text: '' }) as never },
    helperQueue: { enqueue: async () => undefined },
    cronStore: {
      addWithinLimits: async () => ({ added: true, nextRun: undefined }),
      list: async () => [],
      remove: async () => false,
    },
    config: parseConfig({ MAGPIE_WORKSPACE: ws, MAGPIE_TIMEZONE: 'UTC' }),
    askAgent: { self: 'main', agents: ['work'], ask: async () => 'an answer' },
  });

  it('describes each built-in tool exactly once, with its readOnly flag', () => {
    const names = TOOL_CATALOG.map((d) => d.name);
    expect([...names].sort()).toEqual(Object.keys(BUILT_IN).sort());
    expect(new Set(names).size).toBe(names.length);
    for (const d of TOOL_CATALOG) expect(d.readOnly, d.name).toBe(BUILT_IN[d.name]);
  });

  it('builds every tool when every need is met, and the registry knows which only read', async () => {
    const registry = new ToolRegistry(await buildTools(everything()));
    expect([...registry.names()].sort()).toEqual(Object.keys(BUILT_IN).sort());
    for (const [name, readOnly] of Object.entries(BUILT_IN)) {
      expect(registry.isReadOnly(name), name).toBe(readOnly);
    }
    expect(registry.isReadOnly('no_such_tool')).toBe(false);
  });

  it('leaves out a tool whose needs are absent: no search backend, no web_search; no cron store, no cron', async () => {
    const { searchBackend: _search, cronStore: _cron, helperQueue: _queue, ...rest } = everything();
    const names = (await buildTools(rest)).map((t) => t.name);
    expect(names).not.toContain('web_search');
    expect(names).not.toContain('cron');
    expect(names).not.toContain('spawn');
    expect(names).toContain('memory_search');
    const bare = (await buildTools({ workspace: ws })).map((t) => t.name);
    expect(bare).toEqual(CORE_TOOL_NAMES);
  });

  it('counts an MCP tool as read-only only when its server marks it readOnlyHint', () => {
    const mcpTool = (readOnly?: boolean) =>
      createMcpTool({
        server: 'files',
        info: { name: 'look', description: 'looks', inputSchema: {}, ...(readOnly ? { readOnly } : {}) },
        name: `files__look${readOnly ? '_ro' : ''}`,
        call: async () => ({ content: [] }),
        vision: false,
        maxChars: 1_000,
        secrets: [],
        timeLimitMs: 1_000,
      });
    const registry = new ToolRegistry([mcpTool(), mcpTool(true)]);
    expect(registry.isReadOnly('files__look')).toBe(false);
    expect(registry.isReadOnly('files__look_ro')).toBe(true);
  });
});
