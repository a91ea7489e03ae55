/**
 * The local web dashboard: Bull Board for the queues, our own pages for live
 * turns, sessions and schedules, and Prometheus `/metrics`. Bound to
 * 127.0.0.1 only. In front of every route: security headers and a Host check
 * (dashboard-guard.ts), then the token (dashboard-auth.ts: a sign-in form or
 * `?token=` once, which sets an HttpOnly cookie holding a value derived from
 * the token, or `Authorization: Bearer <token>`). The usage page's charts
 * are drawn by uPlot, whose script and stylesheet the dashboard serves from
 * node_modules (no CDN) behind the same token.
 *
 * With several agents (agents.json) the overview, usage and sessions pages
 * show one agent at a time (`?agent=ID`, main by default; an unknown id is
 * 404), Bull Board shows every agent's queues (another agent's named
 * `<id>:<queue>`), and `/metrics` labels every sample with its agent.
 */
import { readFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { createBullBoard } from '@bull-board/api';
import { ExpressAdapter } from '@bull-board/express';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { MAIN_AGENT } from '../agents/spec.js';
import { periodOf } from '../budget/budget.js';
import type { BudgetView } from '../budget/report.js';
import { SPEND_DAYS_KEPT } from '../bus/budget-store.js';
import { AppError, describeError, hasCode } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { emptySpend } from '../messages/budget.js';
import type { TokenPrices } from '../messages/token-counts.js';
import { formatBudgetLines } from './budget-status.js';
import { AgentPick, type DashboardAgent } from './dashboard-agent-pick.js';
import { dashboardAuth } from './dashboard-auth.js';
import { requireLoopbackHost, securityHeaders } from './dashboard-guard.js';
import {
  OVERVIEW_SCRIPT,
  OVERVIEW_SCRIPT_PATH,
  overviewPage,
  sessionsPage,
  transcriptPage,
} from './dashboard-pages.js';
import { createMetrics } from './metrics.js';
import type { OpsReader } from './ports.js';
import { collectStatus } from './status.js';
import { turnTimelinePage } from './turn-timeline-page.js';
import { usageChartData } from './usage-charts.js';
import { USAGE_ASSETS, USAGE_SCRIPT, usagePage } from './usage-page.js';

export interface DashboardOptions {
  /** Main's bus's read side (bus/ops-reader.ts); the dashboard closes the Bull Board queues it opens. */
  reader: OpsReader;
  /** The Redis URL (shown with the password hidden). */
  url: string;
  /** Main's bus prefix. */
  prefix: string;
  /** Main's workspace. */
  workspace: string;
  logger: Logger;
  /** Port on 127.0.0.1; 0 picks a free one. @defaultValue 0 */
  port?: number;
  /** The access token (see loadDashboardToken: MAGPIE_DASHBOARD_TOKEN or the state folder's file). */
  token: string;
  /** How often the queue list of Bull Board is refreshed. @defaultValue 30000 */
  queueRefreshMs?: number;
  /** IANA time zone of "today" in the token figures (MAGPIE_TIMEZONE). @defaultValue the system's time zone */
  timezone?: string;
  /**
   * Main's spending limits and the spend kept per day (src/budget/report.ts budgetView): `/metrics`'
   * budget gauges, the overview's budget lines and the usage charts. @defaultValue none: no
   * gauges, and the usage page says "no usage yet"
   */
  budget?: BudgetView;
  /** Main's name in agents.json, shown in the agent switcher. @defaultValue main */
  name?: string;
  /**
   * The other agents of agents.json, in its order: the switcher offers them, Bull Board shows
   * their queues, `/metrics` their figures. @defaultValue none: main alone, no switcher
   */
  agents?: readonly DashboardAgent[];
  /** Prices per million tokens (MAGPIE_PRICE_*): costs are estimated. @defaultValue none */
  prices?: TokenPrices;
  /**
   * The web chat (src/channels/web/routes.ts), mounted at `/chat` behind the same headers, Host
   * check and token. @defaultValue none: `/chat` is not found (the gateway's dashboard has it)
   */
  chat?: Router;
}

export interface Dashboard {
  /** `http://127.0.0.1:<port>/` (without the token: safe to log). */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export type { DashboardAgent } from './dashboard-agent-pick.js';

/** Starts the dashboard server. */
export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const { logger } = options;
  const main: DashboardAgent = {
    id: MAIN_AGENT,
    ...(options.name ? { name: options.name } : {}),
    reader: options.reader,
    prefix: options.prefix,
    workspace: options.workspace,
    ...(options.budget ? { budget: options.budget } : {}),
  };
  const pick = new AgentPick([main, ...(options.agents ?? [])], logger);
  const metrics = createMetrics(main.reader, {
    ...(options.prices ? { prices: options.prices } : {}),
    ...(main.budget ? { budget: main.budget } : {}),
    agents: (options.agents ?? []).map((a) => ({
      id: a.id,
      reader: a.reader,
      ...(a.budget ? { budget: a.budget } : {}),
    })),
  });
  const usageOptions = {
    ...(options.timezone ? { timezone: options.timezone } : {}),
    ...(options.prices ? { prices: options.prices } : {}),
  };
  const uplot = await uplotAssets();
  const app = express();
  app.disable('x-powered-by');
  app.use(securityHeaders());
  app.use(requireLoopbackHost());
  app.use(dashboardAuth(options.token));

  const board = new ExpressAdapter();
  board.setBasePath('/queues');
  // Every agent's queues on one board: main's under their own names, the others' as `<id>:<queue>`.
  const queues = pick
    .all()
    .map((a) => (a.id === MAIN_AGENT ? a.reader.boardQueues() : a.reader.boardQueues(a.id)));
  // @bull-board/express 9.10.1 pins its own copy of @bull-board/api 9.10.1: the same API at run time,
  // but TypeScript sees two declarations of the adapter types.
  const serverAdapter = board as unknown as Parameters<typeof createBullBoard>[0]['serverAdapter'];
  const bull = createBullBoard({
    queues: [],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'magpie' } },
  });
  const syncQueues = async () => {
    for (const source of queues) for (const adapter of await source.added()) bull.addQueue(adapter);
  };
  await syncQueues();
  const refresh = setInterval(() => {
    syncQueues().catch((err: unknown) =>
      logger.debug({ err: describeError(err) }, 'queue list not refreshed'),
    );
  }, options.queueRefreshMs ?? 30_000);
  refresh.unref();
  app.use('/queues', board.getRouter());
  if (options.chat) app.use('/chat', options.chat);
  else
    app.get('/chat', (_req, res) => {
      res
        .status(404)
        .type('text')
        .send(
          'magpie dashboard: the web chat is served by the dashboard inside magpie start / magpie gateway (MAGPIE_DASHBOARD_PORT)',
        );
    });

  app.get('/', (req, res) => {
    const agent = pick.of(req, res);
    if (agent) res.type('html').send(overviewPage(pick.nav(agent, '/')));
  });
  app.get(OVERVIEW_SCRIPT_PATH, (_req, res) => {
    res.type('text/javascript').send(OVERVIEW_SCRIPT);
  });
  app.get('/api/overview', async (req, res, next) => {
    try {
      const agent = pick.of(req, res, 'text');
      if (!agent) return;
      const [status, turns] = await Promise.all([
        collectStatus({
          reader: agent.reader,
          url: options.url,
          prefix: agent.prefix,
          workspace: agent.workspace,
          ...usageOptions,
          ...(agent.budget ? { budget: agent.budget } : {}),
          ...(agent.lastBackup ? { lastBackup: agent.lastBackup } : {}),
        }),
        agent.reader.turns(30),
      ]);
      res.json({ status, turns, budgetLines: status.budget ? formatBudgetLines(status.budget) : [] });
    } catch (err) {
      next(err);
    }
  });
  app.get('/usage', (req, res) => {
    const agent = pick.of(req, res);
    if (agent) res.type('html').send(usagePage(pick.nav(agent, '/usage')));
  });
  app.get(USAGE_ASSETS.script, (_req, res) => {
    res.type('text/javascript').send(USAGE_SCRIPT);
  });
  app.get(USAGE_ASSETS.uplot, (_req, res) => {
    res.type('text/javascript').send(uplot.script);
  });
  app.get(USAGE_ASSETS.uplotCss, (_req, res) => {
    res.type('text/css').send(uplot.css);
  });
  app.get('/api/usage', async (req, res, next) => {
    try {
      const agent = pick.of(req, res, 'text');
      if (!agent) return;
      const days = Math.min(SPEND_DAYS_KEPT, Math.max(1, Math.trunc(Number(req.query.days)) || 14));
      const summary = agent.budget ? await agent.budget.summary(days) : undefined;
      res.json(summary ? usageChartData(summary) : noUsage(options.timezone));
    } catch (err) {
      next(err);
    }
  });
  app.get('/api/turns', async (req, res, next) => {
    try {
      const agent = pick.of(req, res, 'text');
      if (!agent) return;
      const count = Math.min(500, Math.max(1, Number(req.query.count) || 50));
      res.json(await agent.reader.turns(count));
    } catch (err) {
      next(err);
    }
  });
  app.get('/turns', async (req, res, next) => {
    try {
      const agent = pick.of(req, res);
      if (!agent) return;
      res.type('html').send(turnTimelinePage(await agent.reader.turns(50), pick.nav(agent, '/turns')));
    } catch (err) {
      next(err);
    }
  });
  app.get('/sessions', async (req, res, next) => {
    try {
      const agent = pick.of(req, res);
      if (!agent) return;
      res.type('html').send(sessionsPage(await agent.sessions.list(), pick.nav(agent, '/sessions')));
    } catch (err) {
      next(err);
    }
  });
  app.get('/sessions/:key', async (req, res, next) => {
    try {
      const agent = pick.of(req, res);
      if (!agent) return;
      const key = String(req.params.key);
      res
        .type('html')
        .send(transcriptPage(key, await agent.sessions.getHistory(key), pick.nav(agent, '/sessions')));
    } catch (err) {
      if (hasCode(err, 'INVALID_SESSION_KEY')) res.status(404).type('text').send('no such session');
      else next(err);
    }
  });
  app.get('/metrics', async (_req, res, next) => {
    try {
      const text = await metrics.render();
      res.type(metrics.contentType).send(text);
    } catch (err) {
      next(err);
    }
  });
  app.use((_req, res) => {
    res.status(404).type('text').send('not found');
  });
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    logger.warn({ err: describeError(err) }, 'dashboard request failed');
    res.status(500).type('text').send('internal error (see the log)');
  });

  const server = await listen(app, options.port ?? 0);
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}/`;
  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    close() {
      closing ??= (async () => {
        clearInterval(refresh);
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await Promise.all(queues.map((q) => q.close()));
      })();
      return closing;
    },
  };
}

/** uPlot's browser build and stylesheet, read once from node_modules. */
async function uplotAssets(): Promise<{ script: string; css: string }> {
  const require = createRequire(import.meta.url);
  try {
    const [script, css] = await Promise.all([
      readFile(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
      readFile(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
    ]);
    return { script, css };
  } catch (err) {
    throw new AppError(
      'INTERNAL',
      `the dashboard's chart library (uplot) is missing: ${describeError(err)}; run npm install`,
      {
        cause: err,
      },
    );
  }
}

/** `/api/usage` when the dashboard was given no budget view: nothing to draw. */
function noUsage(timezone = Intl.DateTimeFormat().resolvedOptions().timeZone) {
  const { date, month } = periodOf(Date.now(), timezone);
  return usageChartData({
    timezone,
    date,
    month,
    today: emptySpend(),
    thisMonth: emptySpend(),
    days: [],
    limits: { maxCallsPerMinute: 0 },
  });
}

function listen(app: express.Express, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, '127.0.0.1', (err?: Error) => {
      if (err)
        reject(
          new AppError('INTERNAL', `the dashboard cannot listen on 127.0.0.1:${port}: ${err.message}`, {
            cause: err,
          }),
        );
      else resolve(server);
    });
  });
}
