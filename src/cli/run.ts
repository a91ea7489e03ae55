/**
 * The `magpie` command line, run by the entry (src/main.ts). Parses the
 * subcommand and lazy-loads only the module it needs, so `magpie agent -m`
 * does not pay for the bus. The role commands (start, gateway, worker) get
 * the role runner from the entry ({@link CliDeps}) instead of importing it.
 */
import { debugEnabled } from '../config/debug.js';
import { AppError, describeError, ExitCode } from '../errors/index.js';
import { enablePrivateCompileCache } from './compile-cache.js';
import { nodeTooOld } from './node-version.js';
import type { RunRole } from './role-command.js';
import { shedSecretEnvironment } from './shed-secrets.js';

/** What the entry hands the command line. */
export interface CliDeps {
  /** Builds a role from its Config and runs it until a signal (src/main.ts). */
  runRole: RunRole;
}

interface CommandModule {
  run(argv: string[]): Promise<number>;
}

/** A role command's module: its `run` takes the role runner. */
interface RoleCommandModule {
  run(argv: string[], runRole: RunRole): Promise<number>;
}

/** A subcommand: its one-line help, the module that runs it, whether it sheds secrets first. */
interface CommandEntry {
  help: string;
  load: (deps: CliDeps) => Promise<CommandModule>;
  /**
   * Re-executes without secrets found in the environment (shed-secrets.ts) before its
   * module loads, so the replaced process has done next to nothing; the command's own
   * call then returns the same outcome. @defaultValue false
   */
  shedsSecrets?: boolean;
}

/** Every subcommand. */
const COMMANDS: Record<string, CommandEntry> = {
  onboard: {
    help: 'guided set-up: endpoint, key and model (checked live), bots, web search; writes .env',
    load: () => import('./commands/onboard.js'),
  },
  init: {
    help: 'create the workspace from the templates (never overwrites)',
    load: () => import('./commands/init.js'),
  },
  agent: {
    help: 'talk to the agent in-process (-m "text" for one message); no Redis needed',
    load: () => import('./commands/agent.js'),
    shedsSecrets: true,
  },
  start: {
    help: 'run everything in one process: channels, worker, schedulers',
    load: (deps) => withRunner(import('./commands/start.js'), deps),
    shedsSecrets: true,
  },
  gateway: {
    help: 'run channel adapters and outbound delivery only',
    load: (deps) => withRunner(import('./commands/gateway.js'), deps),
    shedsSecrets: true,
  },
  worker: {
    help: 'run an agent worker and scheduled jobs',
    load: (deps) => withRunner(import('./commands/worker.js'), deps),
    shedsSecrets: true,
  },
  send: {
    help: 'send one message through the bus to the running daemon and print the reply',
    load: () => import('./commands/send.js'),
  },
  chat: { help: 'interactive chat through the bus', load: () => import('./commands/chat.js') },
  status: {
    help: 'queues, workers, running turns, sessions, schedules (--json)',
    load: () => import('./commands/status.js'),
  },
  agents: {
    help: 'the assistants of agents.json (workspace, model, tools) and the routes to them (--json)',
    load: () => import('./commands/agents.js'),
  },
  usage: {
    help: 'tokens and cost per day, chat and model, and the spending limits (--json, --days N)',
    load: () => import('./commands/usage.js'),
  },
  doctor: {
    help: 'check configuration, workspace, Redis, the LLM endpoint, channel tokens, MCP servers and web search',
    load: () => import('./commands/doctor.js'),
  },
  approvals: {
    help: 'list waiting approval questions and "always allow" rules, or revoke one (approvals list | revoke <chat> <N>)',
    load: () => import('./commands/approvals.js'),
  },
  pairing: {
    help: 'list or approve pairing requests (pairing list | pairing approve <code>)',
    load: () => import('./commands/pairing.js'),
  },
  cron: {
    help: 'list or remove scheduled tasks (cron list | cron remove <id>)',
    load: () => import('./commands/cron.js'),
  },
  skills: { help: 'list skills and report malformed ones', load: () => import('./commands/skills.js') },
  memory: {
    help: 'search memory and past conversations (memory search "…" | memory reindex)',
    load: () => import('./commands/memory.js'),
  },
  mcp: {
    help: 'MCP servers of mcp.json: connected or why not, and their tools (--json)',
    load: () => import('./commands/mcp.js'),
  },
  dashboard: { help: 'serve the local web dashboard', load: () => import('./commands/dashboard.js') },
  backup: {
    help: 'write one archive of the workspace and the Redis state while magpie runs (--out FILE, --with-secrets)',
    load: () => import('./commands/backup.js'),
  },
  restore: {
    help: 'restore an archive of "magpie backup" into an empty workspace and Redis (--force, --with-secrets)',
    load: () => import('./commands/restore.js'),
  },
};

/** A role command bound to the entry's role runner. */
async function withRunner(module: Promise<RoleCommandModule>, deps: CliDeps): Promise<CommandModule> {
  const { run } = await module;
  return { run: (argv) => run(argv, deps.runRole) };
}

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.help}`);
  return `usage: magpie <command> [options]\n\ncommands:\n${lines.join('\n')}\n\nRun "magpie <command> --help" for a command's options.`;
}

async function main(argv: string[], deps: CliDeps): Promise<number> {
  const tooOld = nodeTooOld();
  if (tooOld) {
    process.stderr.write(`${tooOld}\n`);
    return ExitCode.config;
  }
  // Compiled code of the chunks and packages is cached on disk (Node 22.1+): later starts skip parsing.
  enablePrivateCompileCache();
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${usage()}\n`);
    return name ? ExitCode.ok : ExitCode.config;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`magpie: unknown command "${name}"; run "magpie --help" for the list\n`);
    return ExitCode.config;
  }
  // `--help` prints without re-executing, as the command alone would.
  if (command.shedsSecrets && !rest.includes('--help') && !rest.includes('-h')) shedSecretEnvironment();
  const mod = await command.load(deps);
  return mod.run(rest);
}

/**
 * Runs `magpie <argv>` and sets the process's exit code; an error is one
 * line on stderr (its stack too with MAGPIE_DEBUG).
 *
 * @example runCli(process.argv.slice(2), { runRole });
 */
export function runCli(argv: string[], deps: CliDeps): Promise<void> {
  return main(argv, deps).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`magpie: ${describeError(err)}\n`);
      process.exitCode = err instanceof AppError ? err.exitCode : ExitCode.failure;
      if (!(err instanceof AppError) && debugEnabled()) console.error(err);
    },
  );
}
