/**
 * mcp.json: the `mcpServers` file Claude Desktop, Cursor and others use,
 * validated with zod into one spec per server. The file must live outside the
 * workspace (the agent's file tools must not be able to add a server): a path
 * that resolves into it, or a file with other hard links, is refused. `${VAR}`
 * in `env`, `headers`, `args`, `url` and `cwd` comes from magpie's environment.
 */
import { readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { describeJsonError, stripJsonComments } from '../config/jsonc.js';
import { ConfigError, describeError } from '../errors/index.js';
import { type Expansion, expandRecord, expandVariables, newExpansion } from './expand.js';

/** What every server spec has. */
interface ServerSpecBase {
  /** The key in `mcpServers`, as written. */
  name: string;
  /** How the server is shown: the command line or URL as written (no expanded secrets, no credentials). */
  display: string;
  /** Values to redact from its output and from logs (expanded variables, tokens in headers and env). */
  secrets: string[];
  /** Why the server cannot start at all (an unset variable); it is then not retried. */
  problem?: string;
}

/** A server magpie starts as a child process and talks to over stdin/stdout. */
export interface StdioServerSpec extends ServerSpecBase {
  transport: 'stdio';
  command: string;
  args: string[];
  /** Only these variables are added to the small base environment (PATH, HOME, LANG, TZ). */
  env: Record<string, string>;
  /** Absolute; relative paths in the file are taken from the file's folder. */
  cwd?: string;
}

/** A server magpie reaches over HTTP: Streamable HTTP, or the older SSE transport. */
export interface HttpServerSpec extends ServerSpecBase {
  /** `http`: Streamable HTTP, falling back to SSE when the server does not speak it; `sse`: SSE only. */
  transport: 'http' | 'sse';
  /** Without user:password (those become an Authorization header). */
  url: string;
  headers: Record<string, string>;
  /** Try the SSE transport when Streamable HTTP is refused. @defaultValue true unless `type` says "http" */
  sseFallback: boolean;
}

export type McpServerSpec = StdioServerSpec | HttpServerSpec;

/** The servers of one mcp.json (disabled ones left out). */
export interface McpConfig {
  file: string;
  servers: McpServerSpec[];
}

const stringRecord = z.record(z.string(), z.string({ error: 'must be a string' }));

const StdioSchema = z.looseObject({
  type: z.literal('stdio').optional(),
  command: z.string({ error: 'must be a string' }).trim().min(1, { error: 'must name a program' }),
  args: z.array(z.string({ error: 'must be a string' }), { error: 'must be a list of strings' }).optional(),
  env: stringRecord.optional(),
  cwd: z.string().min(1).optional(),
  disabled: z.boolean({ error: 'must be true or false' }).optional(),
});

const HttpSchema = z.looseObject({
  type: z
    .enum(['http', 'streamable-http', 'streamableHttp', 'sse'], {
      error: 'must be "http", "streamable-http" or "sse"',
    })
    .optional(),
  url: z.string({ error: 'must be a string' }).min(1, { error: 'must be a URL' }),
  headers: stringRecord.optional(),
  disabled: z.boolean({ error: 'must be true or false' }).optional(),
});

/** Header and variable names whose literal values are secrets too. */
const SECRET_NAME = /authorization|token|key|secret|password|cookie|credential/i;

export interface LoadMcpConfigOptions {
  /** The file (MAGPIE_MCP_CONFIG, default ./mcp.json), absolute. */
  file: string;
  /** The workspace; the file may not resolve into it. */
  workspace: string;
  /** Where `${VAR}` values come from (magpie's environment, after .env). */
  env: NodeJS.ProcessEnv;
}

/**
 * Reads and validates mcp.json.
 *
 * @returns undefined when the file does not exist (no MCP at all).
 * @throws ConfigError (exit 2) with one line naming the file and what is wrong.
 * @example
 * const mcp = await loadMcpConfig({ file: config.mcp.configFile, workspace: config.workspace, env: process.env });
 */
export async function loadMcpConfig(options: LoadMcpConfigOptions): Promise<McpConfig | undefined> {
  const { file, env } = options;
  const bad = (what: string) => new ConfigError(`MCP config ${file}: ${what}`);
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw bad(`cannot be read (${describeError(err)})`);
  }
  if (!info.isFile()) throw bad('is not a file');
  await assertOutsideWorkspace(file, options.workspace, bad);
  if (info.nlink > 1)
    throw bad('has other hard links, so it could be changed from elsewhere: copy it instead');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw bad(`cannot be read (${describeError(err)})`);
  }
  let raw: unknown;
  const stripped = stripJsonComments(text);
  try {
    raw = JSON.parse(stripped);
  } catch (err) {
    throw bad(`is not valid JSON: ${describeJsonError(err, stripped)}`);
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw bad('must hold a JSON object');
  const servers = (raw as { mcpServers?: unknown }).mcpServers;
  if (servers === undefined) throw bad('has no "mcpServers" object');
  if (!servers || typeof servers !== 'object' || Array.isArray(servers)) {
    throw bad('"mcpServers" must be an object of named servers');
  }
  const specs: McpServerSpec[] = [];
  for (const [name, value] of Object.entries(servers)) {
    if (name.trim() === '') throw bad('a server in "mcpServers" has an empty name');
    const spec = parseServer(name, value, path.dirname(file), env, bad);
    if (spec) specs.push(spec);
  }
  return { file, servers: specs };
}

/** One server's entry, or undefined when it is disabled. */
function parseServer(
  name: string,
  value: unknown,
  baseDir: string,
  env: NodeJS.ProcessEnv,
  bad: (what: string) => ConfigError,
): McpServerSpec | undefined {
  const where = `mcpServers.${name}`;
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw bad(`${where} must be an object`);
  const entry = value as Record<string, unknown>;
  const isHttp = 'url' in entry || (typeof entry.type === 'string' && entry.type !== 'stdio');
  if (!isHttp && !('command' in entry)) {
    throw bad(`${where} needs "command" (a program to run) or "url" (an HTTP endpoint)`);
  }
  const checked = (isHttp ? HttpSchema : StdioSchema).safeParse(entry);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    const field = issue.path.length > 0 ? `.${issue.path.map(String).join('.')}` : '';
    throw bad(`${where}${field} ${issue.message.replace(/^Invalid input: /, '')}`);
  }
  if (checked.data.disabled) return undefined;
  const expansion = newExpansion();
  const spec = isHttp
    ? httpSpec(name, checked.data as z.infer<typeof HttpSchema>, env, expansion, bad)
    : stdioSpec(name, checked.data as z.infer<typeof StdioSchema>, baseDir, env, expansion);
  spec.secrets = [...new Set([...spec.secrets, ...expansion.substituted])].filter((s) => s.length >= 4);
  if (expansion.missing.size > 0) {
    const names = [...expansion.missing].map((v) => `\${${v}}`).join(', ');
    spec.problem = `${names} ${expansion.missing.size === 1 ? 'is' : 'are'} not set in magpie's environment (.env)`;
  }
  return spec;
}

function stdioSpec(
  name: string,
  data: z.infer<typeof StdioSchema>,
  baseDir: string,
  env: NodeJS.ProcessEnv,
  expansion: Expansion,
): StdioServerSpec {
  const args = data.args ?? [];
  const serverEnv = expandRecord(data.env ?? {}, env, expansion);
  const secrets = Object.entries(serverEnv)
    .filter(([key]) => SECRET_NAME.test(key))
    .map(([, v]) => v);
  const cwd =
    data.cwd === undefined ? undefined : path.resolve(baseDir, expandVariables(data.cwd, env, expansion));
  return {
    name,
    transport: 'stdio',
    display: [data.command, ...args].join(' '),
    command: expandVariables(data.command, env, expansion),
    args: args.map((a) => expandVariables(a, env, expansion)),
    env: serverEnv,
    ...(cwd ? { cwd } : {}),
    secrets,
  };
}

function httpSpec(
  name: string,
  data: z.infer<typeof HttpSchema>,
  env: NodeJS.ProcessEnv,
  expansion: Expansion,
  bad: (what: string) => ConfigError,
): HttpServerSpec {
  const expanded = expandVariables(data.url, env, expansion);
  const where = `mcpServers.${name}.url`;
  if (!URL.canParse(expanded)) throw bad(`${where} is not a URL (expected e.g. http://127.0.0.1:8808/mcp)`);
  const url = new URL(expanded);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad(`${where} must be http(s)`);
  const headers = expandRecord(data.headers ?? {}, env, expansion);
  const secrets = Object.entries(headers)
    .filter(([key]) => SECRET_NAME.test(key))
    .map(([, v]) => v);
  if (url.username || url.password) {
    const user = decodeURIComponent(url.username);
    const password = decodeURIComponent(url.password);
    const basic = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    if (!Object.keys(headers).some((key) => key.toLowerCase() === 'authorization'))
      headers.Authorization = basic;
    secrets.push(password, basic);
    url.username = '';
    url.password = '';
  }
  const shown = URL.canParse(data.url) ? new URL(data.url) : undefined;
  if (shown) {
    shown.username = '';
    shown.password = '';
  }
  return {
    name,
    transport: data.type === 'sse' ? 'sse' : 'http',
    display: shown?.href ?? data.url,
    url: url.href,
    headers,
    sseFallback: data.type === undefined,
    secrets,
  };
}

/** Refuses a config file that is (or links to a file) inside the workspace. */
async function assertOutsideWorkspace(
  file: string,
  workspace: string,
  bad: (what: string) => ConfigError,
): Promise<void> {
  const [realFile, realWorkspace] = await Promise.all([
    realpath(file),
    realpath(workspace).catch(() => path.resolve(workspace)),
  ]);
  for (const [candidate, root] of [
    [realFile, realWorkspace],
    [path.resolve(file), path.resolve(workspace)],
  ] as const) {
    const relative = path.relative(root, candidate);
    const outside = relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative);
    if (!outside) {
      throw bad(
        `is inside the workspace (${workspace}), where the agent's own tools could change it: ` +
          'keep mcp.json beside .env, outside the workspace (MAGPIE_MCP_CONFIG names another place)',
      );
    }
  }
}
