/**
 * The one place the agent's tools come from: a descriptor per built-in tool
 * (its name, what it needs, whether it only reads, and its factory) and
 * {@link buildTools}, which builds the tools whose needs the composition
 * met. MCP tools join the registry later, through `DynamicTools`.
 */
import type { Config } from '../config/index.js';
import { createAppendFileTool } from './append-file.js';
import { type AgentAsker, createAskAgentTool } from './ask-agent.js';
import type { CronTaskStore } from './cron.js';
import { createEditFileTool } from './edit-file.js';
import { createExecTool } from './exec.js';
import type { ChangeRecorder, FileToolOptions } from './file-tool.js';
import { createListDirTool } from './list-dir.js';
import { createLoadSkillTool } from './load-skill.js';
import { createMemorySearchTool, type MemorySearcher } from './memory-search.js';
import { createMessageTool } from './message.js';
import { createReadFileTool } from './read-file.js';
import { redactResult } from './registry.js';
import type { BwrapSandbox } from './sandbox.js';
import type { SearchBackend } from './search-backends/index.js';
import type { HelperQueue } from './spawn.js';
import { createSpawnTool } from './spawn.js';
import { createSubagentTool, type SubagentRunner } from './subagent.js';
import type { Tool } from './types.js';
import { createWebFetchTool } from './web-fetch.js';
import { createWebSearchTool } from './web-search.js';
import { createWriteFileTool } from './write-file.js';

/** What the tools may need, all given by the composition (src/app/build-agent.ts). */
export interface ToolDeps {
  /** The workspace folder every file tool and exec is confined to. */
  workspace: string;
  /** exec's default time limit. @defaultValue 60_000 */
  execTimeoutMs?: number;
  /** With the sandbox: a command growing the workspace past this many bytes is stopped. @defaultValue no cap */
  execWorkspaceMaxBytes?: number;
  /** Let web_fetch reach private, loopback and link-local addresses. @defaultValue false */
  webAllowPrivate?: boolean;
  /** Values to redact from the core tools' output (API keys, bot tokens). @defaultValue [] */
  secrets?: string[];
  /** Run exec's commands in this sandbox. @defaultValue none: on the host, behind the full deny list */
  execSandbox?: BwrapSandbox;
  /** exec runs nothing and says it is disabled (MAGPIE_EXEC_SANDBOX=auto, no working sandbox). @defaultValue false */
  execDisabled?: boolean;
  /**
   * The workspace is read-only (MAGPIE_SANDBOX_MODE=read-only): write_file, edit_file and
   * append_file refuse every call (exec's sandbox binds it read-only on its own). @defaultValue false
   */
  workspaceReadOnly?: boolean;
  /** Files and folders exec's deny list refuses to name without a sandbox (`.env`, the state folder). @defaultValue [] */
  execProtectedPaths?: string[];
  /** Characters read_file returns at most. @defaultValue 50_000 */
  maxReadChars?: number;
  /** Bytes web_fetch reads at most. @defaultValue 2 MiB */
  fetchMaxBytes?: number;
  /** web_fetch's time limit, redirects included. @defaultValue 30_000 */
  fetchTimeoutMs?: number;
  /** The configured web search backend; without one there is no `web_search`. */
  searchBackend?: SearchBackend;
  /** MEMORY.md's history: the file tools record their changes of it there. @defaultValue none */
  memoryHistory?: ChangeRecorder;
  /** The memory search index; without one there is no `memory_search`. */
  memoryIndex?: MemorySearcher;
  /** The skills; without them there is no `load_skill`. */
  skills?: Parameters<typeof createLoadSkillTool>[0];
  /** Runs helpers in a turn; without it there is no `subagent`. */
  helpers?: SubagentRunner;
  /** Where `spawn` queues helper jobs (the bus in the daemon); without it there is no `spawn`. */
  helperQueue?: HelperQueue;
  /** The scheduled tasks (the bus in the daemon); without it there is no `cron`. */
  cronStore?: CronTaskStore;
  /** The config, for the cron tool's time zone and limits. */
  config?: Config;
  /** The other agents this one may ask (agents.json `canAsk`); without it there is no `ask_agent`. */
  askAgent?: AgentAsker;
}

/** The deps a tool may need beyond the workspace: the tool is built only when all of them are given. */
export type ToolNeed = Exclude<keyof ToolDeps, 'workspace'>;

/** One built-in tool. */
export interface ToolDescriptor {
  /** The name the model calls it by. */
  readonly name: string;
  /** True when the tool only reads (no writes, no commands, no messages). */
  readonly readOnly: boolean;
  /** Deps that must be given for the tool to exist (no search backend → no web_search). */
  readonly needs: readonly ToolNeed[];
  /** Its output has `secrets` redacted by a wrapper (the core tools; the others redact themselves or need not). */
  readonly redacted?: boolean;
  /** Builds the tool; called only when every need is met. */
  create(deps: ToolDeps): Tool | Promise<Tool>;
}

/** The core tools every agent has (`createCoreTools`); their factories are synchronous. */
export const CORE_TOOLS = [
  core('read_file', true, (d) => createReadFileTool(d.workspace, { maxChars: d.maxReadChars })),
  core('write_file', false, (d) => createWriteFileTool(d.workspace, writes(d))),
  core('edit_file', false, (d) => createEditFileTool(d.workspace, writes(d))),
  core('append_file', false, (d) => createAppendFileTool(d.workspace, writes(d))),
  core('list_dir', true, (d) => createListDirTool(d.workspace)),
  core('exec', false, (d) =>
    createExecTool(d.workspace, {
      secrets: usableSecrets(d),
      timeoutMs: d.execTimeoutMs,
      sandbox: d.execSandbox,
      disabled: d.execDisabled === true,
      protectedPaths: d.execProtectedPaths,
      ...(d.execWorkspaceMaxBytes === undefined ? {} : { workspaceMaxBytes: d.execWorkspaceMaxBytes }),
    }),
  ),
  core('web_fetch', true, (d) =>
    createWebFetchTool({
      allowPrivate: d.webAllowPrivate,
      maxBytes: d.fetchMaxBytes,
      timeoutMs: d.fetchTimeoutMs,
    }),
  ),
  core('message', false, () => createMessageTool()),
] as const;

/** Every built-in tool, in the order they are registered. */
export const TOOL_CATALOG: readonly ToolDescriptor[] = [
  ...CORE_TOOLS,
  {
    name: 'web_search',
    readOnly: true,
    needs: ['searchBackend'],
    create: (d) => createWebSearchTool(need(d.searchBackend)),
  },
  {
    name: 'memory_search',
    readOnly: true,
    needs: ['memoryIndex'],
    create: (d) => createMemorySearchTool(need(d.memoryIndex)),
  },
  {
    name: 'load_skill',
    readOnly: true,
    needs: ['skills'],
    create: (d) => createLoadSkillTool(need(d.skills)),
  },
  {
    name: 'subagent',
    readOnly: false,
    needs: ['helpers'],
    create: (d) => createSubagentTool(need(d.helpers)),
  },
  {
    name: 'spawn',
    readOnly: false,
    needs: ['helperQueue'],
    create: (d) => createSpawnTool(need(d.helperQueue)),
  },
  {
    name: 'cron',
    readOnly: false,
    needs: ['cronStore', 'config'],
    // Loaded only when there is a store: the cron tool's module reaches the bus's (bullmq) code.
    create: async (d) =>
      (await import('./cron.js')).createCronTool({ store: need(d.cronStore), config: need(d.config) }),
  },
  {
    name: 'ask_agent',
    readOnly: true,
    needs: ['askAgent'],
    create: (d) => createAskAgentTool(need(d.askAgent)),
  },
];

/**
 * Builds the tools of `catalog` whose needs `deps` meets, in catalog order,
 * each marked with its `readOnly` flag.
 *
 * @example const registry = new ToolRegistry(await buildTools({ workspace, searchBackend }));
 */
export async function buildTools(
  deps: ToolDeps,
  catalog: readonly ToolDescriptor[] = TOOL_CATALOG,
): Promise<Tool[]> {
  const wanted = catalog.filter((d) => available(d, deps));
  return Promise.all(wanted.map(async (d) => finish(d, await d.create(deps), deps)));
}

/** The core tools, built at once (their factories are synchronous). */
export function buildCoreTools(deps: ToolDeps): Tool[] {
  return CORE_TOOLS.map((d) => finish(d, d.create(deps), deps));
}

/** Whether the composition gave everything `descriptor` needs. */
export function available(descriptor: ToolDescriptor, deps: ToolDeps): boolean {
  return descriptor.needs.every((n) => deps[n] !== undefined);
}

/** The file-changing tools' options: refusing every call when the workspace is read-only. */
function writes(deps: ToolDeps): FileToolOptions {
  return {
    readOnly: deps.workspaceReadOnly === true,
    ...(deps.memoryHistory ? { history: deps.memoryHistory } : {}),
  };
}

function core(name: string, readOnly: boolean, create: (deps: ToolDeps) => Tool) {
  return { name, readOnly, needs: [] as readonly ToolNeed[], redacted: true, create };
}

/** The descriptor's flag on the tool, and the secrets wrapper where it asks for one. */
function finish(descriptor: ToolDescriptor, tool: Tool, deps: ToolDeps): Tool {
  const secrets = usableSecrets(deps);
  const built = descriptor.redacted && secrets.length > 0 ? redacting(tool, secrets) : tool;
  return { ...built, readOnly: descriptor.readOnly };
}

/** Secrets long enough to redact without mangling ordinary text. */
function usableSecrets(deps: ToolDeps): string[] {
  return (deps.secrets ?? []).filter((s) => s.length >= 4);
}

/** Wraps a tool so its results never carry a secret value. */
function redacting(tool: Tool, secrets: string[]): Tool {
  return {
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    ...(tool.timeLimitMs === undefined ? {} : { timeLimitMs: tool.timeLimitMs }),
    ...(tool.untrustedOutput === undefined ? {} : { untrustedOutput: tool.untrustedOutput }),
    execute: async (args, ctx) => redactResult(await tool.execute(args, ctx), secrets),
  };
}

/** A need `available` has checked. */
function need<T>(value: T | undefined): T {
  if (value === undefined) throw new TypeError('a tool was built without what it needs');
  return value;
}
