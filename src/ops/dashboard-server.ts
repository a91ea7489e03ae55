/**
 * The local web dashboard: Bull Board for the queues, our own pages for live
 * turns, sessions and schedules, and Prometheus `/metrics`. Bound to
 * 127.0.0.1 only. In front of every route: security headers and a Host check
 * (dashboard-guard.ts), then the token (dashboard-auth.ts: a sign-in form or
 * `?token=` once, which sets an HttpOnly cookie holding a value derived from
 * the token, or `Authorization: Bearer <token>`).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createBullBoard } from '@bull-board/api';
import { ExpressAdapter } from '@bull-board/express';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { AppError, describeError, hasCode } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import type { TokenPrices } from '../messages/token-counts.js';
import { JsonlSessionStore } from '../sessions/jsonl-store.js';
import { dashboardAuth } from './dashboard-auth.js';
import { requireLoopbackHost, securityHeaders } from './dashboard-guard.js';
import {
  OVERVIEW_SCRIPT,
  OVERVIEW_SCRIPT_PATH,
  overviewPage,
  sessionsPage,
  transcriptPage,
} from './dashboard-pages.js';
import { type BudgetGauges, createMetrics } from './metrics.js';
import type { OpsReader } from './ports.js';
import { collectStatus } from './status.js';

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
  /** Spend against the limits, for `/metrics`'s budget gauges. @defaultValue none */
  budget?: BudgetGauges;
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
        collectStatus({ reader, url: options.url, prefix, workspace: options.workspace, ...usageOptions }),
        reader.turns(30),
      ]);
      res.json({ status, turns });
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
