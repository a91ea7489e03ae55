/**
 * `agents.json` (MAGPIE_AGENTS_CONFIG, default `./agents.json` beside
 * `.env`): the assistants one bus serves and the routes that bind where a
 * message comes from to one of them. JSON with comments, validated with zod;
 * a bad file stops start-up with one line naming the field (exit 2).
 *
 * `main` always exists: it is the assistant `.env` describes (its workspace,
 * model, prefix), and the file may change its name, model, tools and the
 * rest. Without the file nothing changes: one agent, `main`, as before.
 *
 * The file is refused inside any agent's workspace (an assistant's tools
 * could rewrite its own routes), and agents' workspaces may not overlap
 * (one assistant's files would be another's).
 */
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { checkDuration } from '../config/duration.js';
import { describeJsonError, stripJsonComments } from '../config/jsonc.js';
import { APPROVAL_MODES, isWithin, SANDBOX_ACCESS_MODES } from '../config/sandbox-settings.js';
import { ConfigError } from '../errors/index.js';

/** The agent `.env` describes. */
export const MAIN_AGENT = 'main';

const ID = /^[a-z][a-z0-9_-]{0,31}$/;
/** What an agent's id looks like. */
export const AGENT_ID = ID;
const toolList = z.array(z.string().min(1).max(100)).max(200);
const money = z.number().nonnegative();

const AgentSchema = z.strictObject({
  id: z.string().regex(ID, 'must be lower-case letters, digits, - or _, starting with a letter (at most 32)'),
  /** Shown in `magpie agents`, GET /v1/models and the dashboard. */
  name: z.string().min(1).max(80).optional(),
  /** Its own folder (relative to agents.json): sessions, memory, notes, skills. Required except for main. */
  workspace: z.string().min(1).optional(),
  model: z.string().min(1).max(200).optional(),
  /** Like MAGPIE_FALLBACK_MODELS: `model`, `model@url`, `model@url#KEY_VAR`. */
  fallbackModels: z.array(z.string().min(1)).max(10).optional(),
  tools: z.strictObject({ allow: toolList.optional(), deny: toolList.optional() }).optional(),
  sandbox: z.enum(SANDBOX_ACCESS_MODES).optional(),
  approval: z.enum(APPROVAL_MODES).optional(),
  heartbeat: z
    .strictObject({
      interval: z.string().min(1).optional(),
      activeHours: z
        .string()
        .regex(/^\d{2}:\d{2}-\d{2}:\d{2}$/, 'must be HH:MM-HH:MM')
        .optional(),
    })
    .optional(),
  budget: z
    .strictObject({
      daily: money.optional(),
      monthly: money.optional(),
      chatDaily: money.optional(),
      dailyTokens: z.number().int().positive().optional(),
    })
    .optional(),
  /** The agents its `ask_agent` tool may ask. */
  canAsk: z.array(z.string().regex(ID)).max(32).optional(),
});

const RouteSchema = z
  .strictObject({
    agent: z.string().regex(ID),
    /** A channel's name (`telegram`), matching every account of it unless `account` says. */
    channel: z.string().min(1).optional(),
    /** A bot account of the channel (`family` for the instance `telegram-family`; `default` for the main bot). */
    account: z.string().min(1).optional(),
    /** A chat id, as the channel writes it. */
    chat: z.string().min(1).optional(),
    /** A sender id, as the channel writes it. */
    sender: z.string().min(1).optional(),
  })
  .refine((r) => r.channel !== undefined || r.chat !== undefined || r.sender !== undefined, {
    message: 'a route needs at least one of channel, chat or sender',
  });

const FileSchema = z.strictObject({
  agents: z.array(AgentSchema).min(1).max(32),
  routes: z.array(RouteSchema).max(500).default([]),
  /** The agent of messages no route names. @defaultValue main */
  default: z.string().regex(ID).optional(),
});

export type AgentSpec = z.infer<typeof AgentSchema> & {
  /** Absolute path of its workspace (main's: MAGPIE_WORKSPACE unless the file says). */
  workspacePath: string;
  /** Its heartbeat interval in ms, when the file sets one. */
  heartbeatMs?: number;
};
export type Route = z.infer<typeof RouteSchema>;

/** The agents and routes, as start-up reads them. */
export interface AgentsFile {
  /** Where it was read from; undefined: there is no file (one agent, main). */
  file: string | undefined;
  /** Every agent, main first. */
  agents: AgentSpec[];
  routes: Route[];
  defaultAgent: string;
}

/** What loading needs from the configuration. */
export interface AgentsLoadOptions {
  file: string;
  /** MAGPIE_WORKSPACE: main's workspace. */
  workspace: string;
  stateDir: string;
}

/** The agents of `file`, or main alone when there is no file. @throws ConfigError (exit 2) naming the field. */
export function loadAgents(options: AgentsLoadOptions): AgentsFile {
  const main: AgentSpec = { id: MAIN_AGENT, workspacePath: options.workspace };
  if (!existsSync(options.file))
    return { file: undefined, agents: [main], routes: [], defaultAgent: MAIN_AGENT };
  const file = path.resolve(options.file);
  if (!statSync(file).isFile()) throw new ConfigError(`${file}: is not a file`);
  return parseAgents(readFileSync(file, 'utf8'), { ...options, file });
}

/**
 * The agents of `text`, read as if it were the file `options.file` (its
 * relative workspaces resolve beside it): how `magpie restore` reads the
 * agents.json of an archive before writing it. @throws ConfigError (exit 2) naming the field.
 */
export function parseAgents(text: string, options: AgentsLoadOptions): AgentsFile {
  const file = path.resolve(options.file);
  const bad = (what: string) => new ConfigError(`${file}: ${what}`);
  const stripped = stripJsonComments(text);
  let raw: unknown;
  try {
    raw = JSON.parse(stripped);
  } catch (err) {
    throw bad(`is not valid JSON: ${describeJsonError(err, stripped)}`);
  }
  const parsed = FileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length
      ? issue.path
          .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
          .join('')
          .replace(/^\./, '')
      : 'the file';
    throw bad(`${where}: ${issue?.message.replace(/^Invalid input: /, '') ?? 'is not valid'}`);
  }
  return checked(parsed.data, { ...options, file }, bad);
}

function checked(
  data: z.infer<typeof FileSchema>,
  options: AgentsLoadOptions,
  bad: (what: string) => ConfigError,
): AgentsFile {
  const base = path.dirname(options.file);
  const byId = new Map<string, AgentSpec>();
  for (const [i, agent] of data.agents.entries()) {
    if (byId.has(agent.id)) throw bad(`agents[${i}].id: "${agent.id}" is listed twice`);
    if (agent.id !== MAIN_AGENT && !agent.workspace)
      throw bad(`agents[${i}].workspace: agent "${agent.id}" needs a workspace of its own`);
    const workspacePath = agent.workspace ? path.resolve(base, agent.workspace) : options.workspace;
    let heartbeatMs: number | undefined;
    if (agent.heartbeat?.interval !== undefined) {
      const interval = agent.heartbeat.interval.trim();
      const read = interval === '0' ? ({ ok: true, ms: 0 } as const) : checkDuration(interval);
      if (!read.ok) throw bad(`agents[${i}].heartbeat.interval: "${interval}" ${read.reason}`);
      heartbeatMs = read.ms;
    }
    byId.set(agent.id, { ...agent, workspacePath, ...(heartbeatMs !== undefined ? { heartbeatMs } : {}) });
  }
  if (!byId.has(MAIN_AGENT)) byId.set(MAIN_AGENT, { id: MAIN_AGENT, workspacePath: options.workspace });
  const agents = [byId.get(MAIN_AGENT)!, ...[...byId.values()].filter((a) => a.id !== MAIN_AGENT)];
  for (const agent of agents) {
    for (const other of agent.canAsk ?? []) {
      if (!byId.has(other)) throw bad(`agent "${agent.id}" canAsk names "${other}", which is not an agent`);
      if (other === agent.id) throw bad(`agent "${agent.id}" canAsk names itself`);
    }
  }
  for (const [i, route] of data.routes.entries())
    if (!byId.has(route.agent)) throw bad(`routes[${i}].agent: "${route.agent}" is not an agent`);
  const defaultAgent = data.default ?? MAIN_AGENT;
  if (!byId.has(defaultAgent)) throw bad(`default: "${defaultAgent}" is not an agent`);
  checkPlaces(agents, options, bad);
  return { file: options.file, agents, routes: data.routes, defaultAgent };
}

/** Real path where it exists (a symlinked folder is judged where it leads). */
function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** No file inside a workspace; no workspace inside another or the state folder inside one. */
function checkPlaces(
  agents: AgentSpec[],
  options: AgentsLoadOptions,
  bad: (what: string) => ConfigError,
): void {
  const file = real(options.file);
  const state = real(options.stateDir);
  for (const agent of agents) {
    const ws = real(agent.workspacePath);
    if (isWithin(ws, file))
      throw bad(
        `is inside the workspace of agent "${agent.id}" (${ws}), where its tools could change it: keep it beside .env`,
      );
    if (isWithin(ws, state))
      throw bad(
        `the state folder ${state} is inside the workspace of agent "${agent.id}": move the workspace`,
      );
    for (const other of agents) {
      if (other === agent) continue;
      const ows = real(other.workspacePath);
      if (isWithin(ws, ows))
        throw bad(
          `the workspace of agent "${other.id}" (${ows}) is inside the workspace of agent "${agent.id}" (${ws}): each agent needs a folder of its own`,
        );
    }
  }
}
