/**
 * Which agent a dashboard request shows: `?agent=ID` names one of the agents
 * the dashboard was given (main when absent). An unknown id, or the parameter
 * given twice, is answered 404 here and shows nothing of any agent.
 */
import path from 'node:path';
import type { Request, Response } from 'express';
import { MAIN_AGENT } from '../agents/spec.js';
import type { BudgetView } from '../budget/report.js';
import type { Logger } from '../log/index.js';
import { JsonlSessionStore } from '../sessions/jsonl-store.js';
import { type AgentNav, escapeHtml, page } from './dashboard-pages.js';
import type { OpsReader } from './ports.js';
import type { LastBackupView } from './status.js';

/** One agent the dashboard shows: its bus's read side, prefix, workspace and budget. */
export interface DashboardAgent {
  /** Its id in agents.json (`?agent=ID`, the `agent` label in `/metrics`). */
  id: string;
  /** Its name in agents.json, shown in the agent switcher. @defaultValue the id */
  name?: string;
  /** Its bus's read side (bus/ops-reader.ts); the dashboard closes the Bull Board queues it opens. */
  reader: OpsReader;
  prefix: string;
  workspace: string;
  /** Its spending limits and spend (dashboard-server.ts DashboardOptions.budget). @defaultValue none */
  budget?: BudgetView;
  /** The last backup recorded (shown with the schedules). @defaultValue none */
  lastBackup?: () => Promise<LastBackupView | undefined>;
}

/** An agent as the dashboard shows it: with its workspace's session store. */
export type ShownAgent = DashboardAgent & { sessions: JsonlSessionStore };

/** The longest id quoted back in a 404 (ids are at most 32 characters). */
const QUOTED_MAX = 40;

/** The dashboard's agents, each with its session store, and the pick of one per request. */
export class AgentPick {
  readonly #agents = new Map<string, ShownAgent>();
  readonly #switcher: AgentNav['agents'];

  /** `agents`: main first, then the others of agents.json. */
  constructor(agents: readonly DashboardAgent[], logger: Logger) {
    for (const agent of agents) {
      const sessions = new JsonlSessionStore({ dir: path.join(agent.workspace, 'sessions'), logger });
      this.#agents.set(agent.id, { ...agent, sessions });
    }
    this.#switcher = agents.map((a) => ({ id: a.id, ...(a.name ? { name: a.name } : {}) }));
  }

  /** Every agent, main first. */
  all(): ShownAgent[] {
    return [...this.#agents.values()];
  }

  /**
   * The agent `req` names, or undefined once a 404 has been sent (an HTML page
   * for pages, text for the JSON API).
   */
  of(req: Request, res: Response, answer: 'html' | 'text' = 'html'): ShownAgent | undefined {
    const wanted = req.query.agent ?? MAIN_AGENT;
    const agent = typeof wanted === 'string' ? this.#agents.get(wanted) : undefined;
    if (agent) return agent;
    const quoted = typeof wanted === 'string' ? `"${wanted.slice(0, QUOTED_MAX)}"` : 'named twice';
    const what = `no agent ${quoted} here (agents: ${[...this.#agents.keys()].join(', ')})`;
    res.status(404);
    if (answer === 'text') res.type('text').send(what);
    else
      res
        .type('html')
        .send(
          page('No such agent', `<main><section class="wide"><h2>${escapeHtml(what)}</h2></section></main>`),
        );
    return undefined;
  }

  /** The header's navigation for a page at `path` showing `agent`. */
  nav(agent: ShownAgent, path: string): AgentNav {
    return { current: agent.id, agents: this.#switcher, path };
  }
}
