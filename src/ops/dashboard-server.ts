/**
 * The local web dashboard: Bull Board for the queues, our own pages for live
 * turns, sessions and schedules, and Prometheus `/metrics`. Bound to
 * 127.0.0.1 only. In front of every route: security headers and a Host check
 * (dashboard-guard.ts), then the token (dashboard-auth.ts: a sign-in form or
 * `?token=` once, which sets an HttpOnly cookie holding a value derived from
 * the token, or `Authorization: Bearer <token>`). The usage page's charts
 * are drawn by uPlot, whose script and stylesheet the dashboard serves from
 * node_modules (no CDN) behind the same token.
 */
import { readFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createBullBoard } from '@bull-board/api';
import { ExpressAdapter } from '@bull-board/express';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { periodOf } from '../budget/budget.js';
import type { BudgetView } from '../budget/report.js';
import { SPEND_DAYS_KEPT } from '../bus/budget-store.js';
import { AppError, describeError, hasCode } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { emptySpend } from '../messages/budget.js';
import type { TokenPrices } from '../messages/token-counts.js';
import { JsonlSessionStore } from '../sessions/jsonl-store.js';
import { formatBudgetLines } from './budget-status.js';
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
import { usageChartData } from './usage-charts.js';
import { USAGE_ASSETS, USAGE_SCRIPT, usagePage } from './usage-page.js';

export interface DashboardOptions {
  /** The bus's read side (bus/ops-reader.ts); the dashboard closes the Bull Board queues it opens. */
  reader: OpsReader;
  /** The Redis URL (shown with the password hidden). */
  url: string;
  prefix: string;
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
   * The spending limits and the spend kept per day (src/budget/report.ts budgetView): `/metrics`'
   * budget gauges, the overview's budget lines and the usage charts. @defaultValue none: no
   * gauges, and the usage page says "no usage yet"
   */
  budget?: BudgetView;
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

/** Starts the dashboard server. */
export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const { reader, prefix, logger } = options;
  const sessions = new JsonlSessionStore({ dir: path.join(options.workspace, 'sessions'), logger });
  const metrics = createMetrics(reader, {
    ...(options.prices ? { prices: options.prices } : {}),
    ...(options.budget ? { budget: options.budget } : {}),
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
  const queues = reader.boardQueues();
  // @bull-board/express 9.10.1 pins its own copy of @bull-board/api 9.10.1: the same API at run time,
  // but TypeScript sees two declarations of the adapter types.
  const serverAdapter = board as unknown as Parameters<typeof createBullBoard>[0]['serverAdapter'];
  const bull = createBullBoard({
    queues: [],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'magpie' } },
  });
  const syncQueues = async () => {
    for (const adapter of await queues.added()) bull.addQueue(adapter);
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

  app.get('/', (_req, res) => {
    res.type('html').send(overviewPage());
  });
  app.get(OVERVIEW_SCRIPT_PATH, (_req, res) => {
    res.type('text/javascript').send(OVERVIEW_SCRIPT);
  });
  app.get('/api/overview', async (_req, res, next) => {
    try {
      const [status, turns] = await Promise.all([
        collectStatus({
          reader,
          url: options.url,
          prefix,
          workspace: options.workspace,
          ...usageOptions,
          ...(options.budget ? { budget: options.budget } : {}),
        }),
        reader.turns(30),
      ]);
      res.json({ status, turns, budgetLines: status.budget ? formatBudgetLines(status.budget) : [] });
    } catch (err) {
      next(err);
    }
  });
  app.get('/usage', (_req, res) => {
    res.type('html').send(usagePage());
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
      const days = Math.min(SPEND_DAYS_KEPT, Math.max(1, Math.trunc(Number(req.query.days)) || 14));
      const summary = options.budget ? await options.budget.summary(days) : undefined;
      res.json(summary ? usageChartData(summary) : noUsage(options.timezone));
    } catch (err) {
      next(err);
    }
  });
  app.get('/api/turns', async (req, res, next) => {
    try {
      const count = Math.min(500, Math.max(1, Number(req.query.count) || 50));
      res.json(await reader.turns(count));
    } catch (err) {
      next(err);
    }
  });
  app.get('/sessions', async (_req, res, next) => {
    try {
      res.type('html').send(sessionsPage(await sessions.list()));
    } catch (err) {
      next(err);
    }
  });
  app.get('/sessions/:key', async (req, res, next) => {
    try {
      const key = String(req.params.key);
      res.type('html').send(transcriptPage(key, await sessions.getHistory(key)));
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
        await queues.close();
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
