/**
 * Who may use the dashboard: whoever holds its token. The token is
 * MAGPIE_DASHBOARD_TOKEN or, when unset, a random one kept in
 * `<stateDir>/dashboard-token` (0600) — never printed or logged; the log
 * says where it is. A browser signs in once (the form at any page, or a
 * `?token=` link) and then holds a cookie with a session value derived from
 * the token (HMAC-SHA256 under a fixed label), not the token itself; scripts
 * send `Authorization: Bearer <token>`. Every comparison is constant-time, and
 * wrong tokens are throttled per client (its socket's remote address; the
 * dashboard listens on 127.0.0.1 only and ignores X-Forwarded-For, which any
 * client can forge): a client over the limit gets 429 for wrong tokens, but a
 * correct token is always accepted, from it and from everyone else.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import path from 'node:path';
import express, { type Request, type Response, type Router } from 'express';
import { ensurePrivateDir, randomSecret, readOrCreateSecret } from '../config/state-dir.js';
import { escapeHtml } from './dashboard-pages.js';

/** The dashboard's token and where an operator finds it. */
export interface DashboardToken {
  token: string;
  /** `MAGPIE_DASHBOARD_TOKEN`, or the path of the token file. */
  source: string;
}

/** The label the session value is derived under; a new label would sign every browser out. */
const SESSION_LABEL = 'magpie dashboard session v1';

/** Wrong tokens allowed per client per minute before its wrong tokens get 429. */
const MAX_FAILURES_PER_MINUTE = 20;
/** Clients whose failures are remembered at once; beyond it the oldest is forgotten. */
const MAX_TRACKED_CLIENTS = 10_000;

/**
 * Wrong tokens per client in the last minute. Only failures are counted and
 * only failures are refused, so nobody can lock the owner out.
 */
export class FailureThrottle {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly max = MAX_FAILURES_PER_MINUTE,
    private readonly now: () => number = Date.now,
  ) {}

  /** True when `client` already has `max` failures in the last minute. */
  throttled(client: string): boolean {
    return this.recent(client).length >= this.max;
  }

  /** Counts one wrong token from `client`. */
  fail(client: string): void {
    const times = this.recent(client);
    times.push(this.now());
    this.failures.delete(client); // re-inserted last: the map stays ordered by last failure
    this.failures.set(client, times);
    if (this.failures.size > MAX_TRACKED_CLIENTS) {
      const oldest = this.failures.keys().next().value;
      if (oldest !== undefined) this.failures.delete(oldest);
    }
  }

  private recent(client: string): number[] {
    const since = this.now() - 60_000;
    const times = (this.failures.get(client) ?? []).filter((t) => t >= since);
    if (times.length === 0) this.failures.delete(client);
    return times;
  }
}

/** The client a request comes from: the socket's remote address (X-Forwarded-For is ignored). */
function clientOf(req: Request): string {
  return req.socket.remoteAddress ?? 'unknown';
}

const TOO_MANY = 'magpie dashboard: too many wrong tokens from this address; wait a minute';

/** `<stateDir>/dashboard-token`. */
export function dashboardTokenFile(stateDir: string): string {
  return path.join(stateDir, 'dashboard-token');
}

/**
 * The token: `configured` (MAGPIE_DASHBOARD_TOKEN) when set, else the one in
 * `<stateDir>/dashboard-token`, made (32 random bytes, hex) the first time.
 * Remove the file to change it.
 */
export function loadDashboardToken(options: { configured?: string; stateDir: string }): DashboardToken {
  if (options.configured) return { token: options.configured, source: 'MAGPIE_DASHBOARD_TOKEN' };
  ensurePrivateDir(options.stateDir);
  const file = dashboardTokenFile(options.stateDir);
  return { token: readOrCreateSecret(file, randomSecret), source: file };
}

/** The value a signed-in browser's cookie holds: HMAC-SHA256(token, label), hex. */
export function sessionValue(token: string): string {
  return createHmac('sha256', token).update(SESSION_LABEL).digest('hex');
}

/** The cookie's name; cookies are per host, not per port, so the port keeps two dashboards apart. */
export function sessionCookieName(port: number): string {
  return `magpie_dashboard_${port}`;
}

/** Constant-time equality of two strings (false for different lengths). */
function same(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The sign-in routes and the check in front of every other route:
 * - `POST /login` (the form: `token`, `next`) sets the cookie and goes to `next`;
 * - `?token=` on any URL sets the cookie and redirects to the same URL without it;
 * - the cookie or a bearer token lets the request through;
 * - anything else gets 401: the sign-in form for a page, one line for the rest.
 */
export function dashboardAuth(token: string): Router {
  const session = sessionValue(token);
  const throttle = new FailureThrottle();
  /** A wrong token: 429 when the client is over its limit, else counted (the caller answers 401). */
  const refused = (req: Request, res: Response): boolean => {
    const client = clientOf(req);
    if (throttle.throttled(client)) {
      res.status(429).type('text').send(TOO_MANY);
      return true;
    }
    throttle.fail(client);
    return false;
  };
  const signIn = (req: Request, res: Response) =>
    res.cookie(sessionCookieName(req.socket.localPort ?? 0), session, {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
    });

  const router = express.Router();
  router.post('/login', express.urlencoded({ extended: false, limit: '4kb' }), (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const next = safeNext(body.next);
    if (typeof body.token === 'string' && same(body.token.trim(), token)) {
      signIn(req, res).redirect(303, next);
      return;
    }
    if (refused(req, res)) return;
    res.status(401).type('html').send(loginPage(next, 'That is not the token.'));
  });
  router.use((req, res, next) => {
    const query = typeof req.query.token === 'string' ? req.query.token : undefined;
    const bearer = /^Bearer (.+)$/.exec(req.get('authorization') ?? '')?.[1];
    if (query !== undefined || bearer !== undefined) {
      if (same(query, token)) {
        const url = new URL(req.originalUrl, 'http://dashboard.invalid');
        url.searchParams.delete('token');
        signIn(req, res).redirect(303, `${url.pathname}${url.search}`);
        return;
      }
      if (same(bearer, token)) {
        next();
        return;
      }
    }
    if (same(cookieValue(req.get('cookie'), sessionCookieName(req.socket.localPort ?? 0)), session)) {
      next();
      return;
    }
    if ((query !== undefined || bearer !== undefined) && refused(req, res)) return;
    res.status(401);
    if (req.method === 'GET' && req.accepts(['html', 'json', 'text']) === 'html') {
      res.type('html').send(loginPage(safeNext(req.originalUrl)));
    } else {
      res.type('text').send('magpie dashboard: token required (see "magpie dashboard --help")');
    }
  });
  return router;
}

/** A local path to return to after signing in; anything else (another site, `//host`) becomes `/`. */
function safeNext(value: unknown): string {
  if (typeof value !== 'string' || !/^\/(?![/\\])/.test(value)) return '/';
  const url = new URL(value, 'http://dashboard.invalid');
  if (url.origin !== 'http://dashboard.invalid') return '/';
  url.searchParams.delete('token');
  return `${url.pathname}${url.search}`;
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key !== name) continue;
    try {
      return decodeURIComponent(value.join('='));
    } catch {
      return undefined; // malformed escape: not a cookie we set
    }
  }
  return undefined;
}

/** The sign-in form (no script: it posts to /login). */
function loginPage(next: string, error = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in · magpie</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>
body{font:15px/1.5 system-ui,sans-serif;background:#f5f6f8;color:#1d2330;display:grid;place-items:center;min-height:90vh;margin:0}
form{background:#fff;padding:24px 28px;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.1);width:min(440px,90vw)}
input[type=password]{width:100%;box-sizing:border-box;padding:8px;margin:8px 0 12px;font:inherit}
button{padding:7px 18px;font:inherit}.error{color:#c62828}code{background:#eef1f6;padding:1px 4px;border-radius:4px}
</style></head><body><form method="post" action="/login">
<h1>magpie dashboard</h1><p>Token required. It is <code>MAGPIE_DASHBOARD_TOKEN</code> if set, else the contents of
<code>dashboard-token</code> in magpie's state folder (where <code>magpie dashboard</code> says).</p>
${error ? `<p class="error">${escapeHtml(error)}</p>` : ''}
<label>Token <input type="password" name="token" autocomplete="current-password" autofocus required></label>
<input type="hidden" name="next" value="${escapeHtml(next)}"><button type="submit">Sign in</button></form></body></html>`;
}
