/**
 * The dashboard server on real Redis, spoken to over raw HTTP (so the Host
 * header and cookies are exactly what a test sends): security headers on
 * every response, refusals included; DNS-rebinding Host headers refused even
 * with the token; the cookie holds a derived value, never the token, and a
 * cookie holding the token itself does not sign in; the sign-in form, its
 * redirect kept on this site, and the throttle on wrong tokens; the token file.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RedisOpsReader } from '../../../src/bus/ops-reader.js';
import { silentLogger } from '../../../src/log/index.js';
import {
  dashboardTokenFile,
  loadDashboardToken,
  sessionCookieName,
  sessionValue,
} from '../../../src/ops/dashboard-auth.js';
import { CONTENT_SECURITY_POLICY } from '../../../src/ops/dashboard-guard.js';
import { type Dashboard, startDashboard } from '../../../src/ops/dashboard-server.js';
import { type WebAnswer, webRequest } from '../../fakes/web-client.js';

const TOKEN = 'a-test-token-that-is-long-enough-0123456789';

type Reply = WebAnswer;

let redis: Redis;
let dashboard: Dashboard;
let port: number;

/** One request with exactly these headers (Host defaults to 127.0.0.1:<port>). */
function request(
  pathname: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; port?: number } = {},
): Promise<Reply> {
  return webRequest(options.port ?? port, options.method ?? 'GET', pathname, options);
}

const bearer = { authorization: `Bearer ${TOKEN}` };
const cookieHeader = (value: string) => ({ cookie: `${sessionCookieName(port)}=${value}` });

function expectSecurityHeaders(reply: Reply): void {
  expect(reply.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
  expect(reply.headers['x-frame-options']).toBe('DENY');
  expect(reply.headers['x-content-type-options']).toBe('nosniff');
  expect(reply.headers['referrer-policy']).toBe('no-referrer');
}

function start(): Promise<Dashboard> {
  const prefix = `test-${randomUUID()}`;
  return startDashboard({
    reader: new RedisOpsReader(redis, prefix),
    url: inject('redisUrl'),
    prefix,
    workspace: mkdtempSync(path.join(os.tmpdir(), 'magpie-dash-sec-')),
    logger: silentLogger(),
    port: 0,
    token: TOKEN,
  });
}

beforeAll(async () => {
  redis = new Redis(inject('redisUrl'));
  dashboard = await start();
  port = dashboard.port;
});

afterAll(async () => {
  await dashboard?.close();
  redis?.disconnect();
});

describe('dashboard security headers', () => {
  it('the policy allows scripts only from the dashboard itself and no framing', () => {
    const directives = Object.fromEntries(
      CONTENT_SECURITY_POLICY.split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1)]),
    );
    expect(directives['script-src']).toEqual(["'self'"]);
    expect(directives['default-src']).toEqual(["'none'"]);
    expect(directives['frame-ancestors']).toEqual(["'none'"]);
    expect(directives['form-action']).toEqual(["'self'"]);
    expect(CONTENT_SECURITY_POLICY).not.toMatch(/unsafe-eval|script-src[^;]*unsafe-inline/);
  });

  it('are on every response: pages, API, Bull Board, script, metrics, 401, 404, 421', async () => {
    const replies = await Promise.all([
      request('/', { headers: bearer }),
      request('/api/turns', { headers: bearer }),
      request('/queues/', { headers: bearer }),
      request('/assets/overview.js', { headers: bearer }),
      request('/metrics', { headers: bearer }),
      request('/sessions', { headers: bearer }),
      request('/no-such-page', { headers: bearer }),
      request('/'),
      request('/api/turns', { headers: { host: `evil.example:${port}` } }),
    ]);
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200, 404, 401, 421]);
    for (const reply of replies) expectSecurityHeaders(reply);
  });

  it('serves no page with an inline script; the overview loads its script from the dashboard', async () => {
    for (const page of ['/', '/sessions', '/queues/']) {
      const { body } = await request(page, { headers: bearer });
      for (const tag of body.match(/<script\b[^>]*>/g) ?? []) {
        if (/type="application\/json"/.test(tag)) continue; // Bull Board's data block is not run
        expect(tag).toMatch(/\ssrc="/);
      }
    }
    const overview = await request('/', { headers: bearer });
    expect(overview.body).toContain('<script src="/assets/overview.js"></script>');
    const script = await request('/assets/overview.js', { headers: bearer });
    expect(script.headers['content-type']).toMatch(/^text\/javascript/);
    expect(script.body).toContain("fetch('/api/overview'");
  });
});

describe('dashboard Host check (DNS rebinding)', () => {
  it('answers 127.0.0.1, localhost and [::1] with its port, in any case', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`]) {
      expect((await request('/api/turns', { headers: { host, ...bearer } })).status).toBe(200);
    }
  });

  it('refuses every other Host with 421, even with the token', async () => {
    const hostile = [
      `evil.example:${port}`,
      `evil.example`,
      `127.0.0.1:${port}.evil.example`,
      `localhost.evil.example:${port}`,
      `127.0.0.1.nip.io:${port}`,
      `localhost.:${port}`,
      `127.0.0.1:${port + 1}`,
      `127.0.0.1`,
      `0.0.0.0:${port}`,
      `127.1:${port}`,
      `[::ffff:127.0.0.1]:${port}`,
    ];
    for (const host of hostile) {
      const reply = await request('/api/turns', { headers: { host, ...bearer } });
      expect({ host, status: reply.status }).toEqual({ host, status: 421 });
      expect(reply.body).not.toContain('"at"');
    }
  });

  it('refuses a request with no Host header at all', async () => {
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.write(`GET /api/turns HTTP/1.0\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
      });
      let out = '';
      socket.on('data', (chunk) => {
        out += chunk.toString();
      });
      socket.once('end', () => resolve(out));
      socket.once('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.[01] (421|400)/);
  });
});

describe('dashboard sign-in', () => {
  it('a ?token= link sets a cookie with a derived value, not the token, and strips the token from the URL', async () => {
    const reply = await request(`/sessions?token=${TOKEN}&x=1`);
    expect(reply.status).toBe(303);
    expect(reply.headers.location).toBe('/sessions?x=1');
    const cookie = reply.headers['set-cookie']?.[0] ?? '';
    expect(cookie).not.toContain(TOKEN);
    expect(cookie).toContain(`${sessionCookieName(port)}=${sessionValue(TOKEN)}`);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    expect(sessionValue(TOKEN)).toMatch(/^[0-9a-f]{64}$/);
    expect((await request('/api/turns', { headers: cookieHeader(sessionValue(TOKEN)) })).status).toBe(200);
  });

  it('refuses a cookie holding the token itself, a changed session value, and the session value as a bearer', async () => {
    const session = sessionValue(TOKEN);
    const flipped = `${session.slice(0, -1)}${session.endsWith('0') ? '1' : '0'}`;
    expect((await request('/api/turns', { headers: cookieHeader(TOKEN) })).status).toBe(401);
    expect((await request('/api/turns', { headers: cookieHeader(flipped) })).status).toBe(401);
    expect((await request('/api/turns', { headers: cookieHeader('%E0%A4%A') })).status).toBe(401);
    expect((await request('/api/turns', { headers: { authorization: `Bearer ${session}` } })).status).toBe(
      401,
    );
    const otherPort = { cookie: `${sessionCookieName(port + 1)}=${session}` };
    expect((await request('/api/turns', { headers: otherPort })).status).toBe(401);
  });

  it('shows a page without the token as a sign-in form (no script) and signs in through it', async () => {
    const form = await request('/sessions?x=1', { headers: { accept: 'text/html' } });
    expect(form.status).toBe(401);
    expect(form.body).toContain('<form method="post" action="/login">');
    expect(form.body).toContain('name="next" value="/sessions?x=1"');
    expect(form.body).not.toMatch(/<script/);
    expect(form.body).not.toContain(TOKEN);

    const post = (body: string) =>
      request('/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
    const wrong = await post(`token=nope&next=${encodeURIComponent('/sessions')}`);
    expect(wrong.status).toBe(401);
    expect(wrong.body).toContain('That is not the token.');
    expect(wrong.headers['set-cookie']).toBeUndefined();

    const right = await post(`token=${TOKEN}&next=${encodeURIComponent('/sessions?x=1')}`);
    expect(right.status).toBe(303);
    expect(right.headers.location).toBe('/sessions?x=1');
    expect(right.headers['set-cookie']?.[0]).toContain(`=${sessionValue(TOKEN)}`);

    for (const next of [
      '//evil.example/',
      'https://evil.example/',
      '/\\evil.example',
      'javascript:alert(1)',
    ]) {
      const away = await post(`token=${TOKEN}&next=${encodeURIComponent(next)}`);
      expect({ next, location: away.headers.location }).toEqual({ next, location: '/' });
    }
  });

  it('answers an API call without the token with one line, not the form', async () => {
    const reply = await request('/api/turns', { headers: { accept: 'application/json' } });
    expect(reply.status).toBe(401);
    expect(reply.body).toMatch(/^magpie dashboard: token required/);
  });
});

describe('dashboard token', () => {
  it('is MAGPIE_DASHBOARD_TOKEN when set, else a random one in <stateDir>/dashboard-token (0600), kept', () => {
    const stateDir = path.join(mkdtempSync(path.join(os.tmpdir(), 'magpie-dash-state-')), 'state');
    expect(loadDashboardToken({ configured: 'from-env', stateDir })).toEqual({
      token: 'from-env',
      source: 'MAGPIE_DASHBOARD_TOKEN',
    });
    const made = loadDashboardToken({ stateDir });
    expect(made.source).toBe(dashboardTokenFile(stateDir));
    expect(made.token).toMatch(/^[0-9a-f]{64}$/);
    expect(readFileSync(made.source, 'utf8').trim()).toBe(made.token);
    expect(statSync(made.source).mode & 0o777).toBe(0o600);
    expect(statSync(stateDir).mode & 0o777).toBe(0o700);
    expect(loadDashboardToken({ stateDir }).token).toBe(made.token);
  });
});

describe('dashboard throttle', () => {
  // Until per-client throttling, the 21st wrong token made every client's correct token 429 too.
  it('answers 429 to a client after its 20 wrong tokens in a minute, yet accepts a correct token from anyone', async () => {
    const own = await start();
    try {
      const to = { port: own.port };
      const statuses: number[] = [];
      for (let i = 0; i < 22; i++) {
        const reply = await request('/api/turns', { ...to, headers: { authorization: 'Bearer wrong' } });
        statuses.push(reply.status);
      }
      expect(statuses).toEqual([...Array(20).fill(401), 429, 429]);
      // The correct token from the failing client itself, and from another client.
      expect((await request('/api/turns', { ...to, headers: bearer })).status).toBe(200);
      const other = await webRequest(own.port, 'GET', '/api/turns', {
        headers: bearer,
        localAddress: '127.0.0.2',
      });
      expect(other.status).toBe(200);
      const query = await request(`/api/turns?token=${TOKEN}`, to);
      expect(query.status).toBe(303);
      const login = await request('/login', {
        ...to,
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `token=${TOKEN}`,
      });
      expect(login.status).toBe(303);
      const cookie = { cookie: `${sessionCookieName(own.port)}=${sessionValue(TOKEN)}` };
      expect((await request('/api/turns', { ...to, headers: cookie })).status).toBe(200);
      // The failing client is still throttled, on every way in; another client's wrong token is only 401.
      expect((await request('/api/turns?token=nope', to)).status).toBe(429);
      const wrongLogin = await request('/login', {
        ...to,
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'token=nope',
      });
      expect(wrongLogin.status).toBe(429);
      const otherWrong = await webRequest(own.port, 'GET', '/api/turns', {
        headers: { authorization: 'Bearer wrong' },
        localAddress: '127.0.0.2',
      });
      expect(otherWrong.status).toBe(401);
      // X-Forwarded-For is ignored: it cannot spread the failures to another address or escape them.
      const forged = await request('/api/turns', {
        ...to,
        headers: { authorization: 'Bearer wrong', 'x-forwarded-for': '203.0.113.9' },
      });
      expect(forged.status).toBe(429);
    } finally {
      await own.close();
    }
  });
});
