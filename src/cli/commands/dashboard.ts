/** `magpie dashboard`: serves the local web dashboard until Ctrl-C. */
import { loadAgentConfigs } from '../../agents/load.js';
import { MAIN_AGENT } from '../../agents/spec.js';
import { dashboardAgents } from '../../app/dashboard-agents.js';
import { Bus } from '../../bus/bus.js';
import { ConfigError, ExitCode } from '../../errors/index.js';
import { loadDashboardToken } from '../../ops/dashboard-auth.js';
import { startDashboard } from '../../ops/dashboard-server.js';
import { defineCommand } from '../command.js';
import { commandConfig, commandEnv, commandLogger, WORKSPACE_FLAG } from '../startup.js';

const HELP = `usage: magpie dashboard [--port N]

Serves the dashboard on 127.0.0.1: queues (Bull Board), live turns, the budget,
usage charts (cost and tokens per day by chat or model, cached share, calls per
hour), sessions and transcripts, schedules, and Prometheus /metrics. Prints its URL and where its
token is: MAGPIE_DASHBOARD_TOKEN, or a random one kept in dashboard-token in
magpie's state folder (MAGPIE_STATE_DIR; remove the file for a new token). The
token is never printed. Sign in with it in the browser's form once (the cookie
then holds a value derived from it), or send "Authorization: Bearer <token>".

With agents.json, the overview, usage and sessions pages have an agent switcher
(?agent=ID, main by default), Bull Board shows every agent's queues (another
agent's as ID:queue) and /metrics labels every figure with its agent.

options:
  --port N         port (default MAGPIE_DASHBOARD_PORT, else 8790; 0 = any free port)
  --workspace DIR  overrides MAGPIE_WORKSPACE
  -h, --help       this help`;

/** The port used when neither --port nor MAGPIE_DASHBOARD_PORT is given. */
export const DEFAULT_DASHBOARD_PORT = 8790;

export const run = defineCommand({
  name: 'dashboard',
  help: HELP,
  flags: { port: { type: 'string' }, ...WORKSPACE_FLAG },
  async run({ values }) {
    const config = commandConfig(values);
    let port = config.dashboard.port ?? DEFAULT_DASHBOARD_PORT;
    if (values.port !== undefined) {
      port = Number(values.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        throw new ConfigError(`magpie dashboard: --port "${values.port}" is not a port number`);
      }
    }
    const logger = commandLogger(config, 'configured');
    const access = loadDashboardToken({ configured: config.dashboard.token, stateDir: config.stateDir });
    // agents.json: one bus per agent (main alone without the file); a bad file ends here (exit 2).
    const { file, configs } = loadAgentConfigs(config, commandEnv(values));
    const buses = new Map<string, Bus>();
    const closeBuses = async () => {
      for (const bus of buses.values()) await bus.close();
    };
    try {
      for (const [id, agent] of configs) buses.set(id, await Bus.connect({ config: agent, logger }));
    } catch (err) {
      await closeBuses();
      throw err;
    }
    const busOf = (id: string) => buses.get(id) as Bus;
    const { main, others } = dashboardAgents(file, busOf, (id) => configs.get(id) ?? config, logger);
    const dashboard = await startDashboard({
      reader: main.reader,
      prefix: main.prefix,
      workspace: main.workspace,
      ...(main.name ? { name: main.name } : {}),
      ...(main.budget ? { budget: main.budget } : {}),
      agents: others,
      url: busOf(MAIN_AGENT).url,
      logger,
      port,
      token: access.token,
      timezone: config.timezone,
      ...(config.prices ? { prices: config.prices } : {}),
    }).catch(async (err: unknown) => {
      await closeBuses();
      throw err;
    });
    process.stdout.write(`magpie dashboard: ${dashboard.url} (sign in with the token in ${access.source})\n`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    });
    await dashboard.close();
    await closeBuses();
    return ExitCode.ok;
  },
});
