/**
 * The dashboard in headless Chromium (Debian's /usr/bin/chromium through
 * playwright-core): a sign-in form without the token, loads after it, shows a
 * turn that just ran, Bull Board lists the queues, a transcript shows hostile
 * text as text, no page breaks its Content-Security-Policy; /metrics parses as
 * Prometheus text. The token is never printed or logged (the URL and where
 * the token lives are). Saves a screenshot to test-artifacts/dashboard.png.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launchChromium } from '../fakes/browser.js';
import { stopProcsThenFake } from '../fakes/daemon.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { freePort } from '../fakes/redis-server.js';
import { build, daemonEnv, magpie, type Proc, ROOT, tempWorkspace } from './daemon-helpers.js';

const HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">';

describe('dashboard', () => {
  let fake: FakeOpenAI;
  let env: NodeJS.ProcessEnv;
  let daemon: Proc | undefined;
  let dashboard: Proc | undefined;
  let browser: Browser | undefined;
  let loginUrl: string;
  let baseUrl: string;
  let token: string;
  let daemonPort: number;

  beforeAll(async () => {
    build();
    fake = await startFakeOpenAI({
      responder: (_req, i) => ({
        content: i === 0 ? 'the dashboard answer' : HOSTILE,
        usage: { prompt_tokens: 321, completion_tokens: 12 },
      }),
    });
    daemonPort = await freePort();
    env = daemonEnv({
      REDIS_URL: inject('redisUrl'),
      OPENAI_BASE_URL: fake.baseURL,
      MAGPIE_WORKSPACE: tempWorkspace(),
      MAGPIE_HEARTBEAT_INTERVAL: '30m',
    });
    daemon = magpie(['start'], {
      ...env,
      MAGPIE_DASHBOARD_PORT: String(daemonPort),
      MAGPIE_DASHBOARD_TOKEN: 'in-daemon-token',
    });
    await daemon.waitFor(/magpie is running/, 20_000);
    for (const [chat, text] of [
      ['dash-e2e', 'hello dashboard'],
      ['notes', HOSTILE],
    ]) {
      const send = magpie(['send', '-m', text as string, '--chat', chat as string, '--timeout', '20s'], env);
      expect(await send.exited).toBe(0);
    }
    dashboard = magpie(['dashboard', '--port', '0'], env);
    const printed = /magpie dashboard: (http:\/\/127\.0\.0\.1:\d+\/) \(sign in with the token in (\/\S+)\)\n/;
    await dashboard.waitFor(printed, 15_000);
    const [, url, tokenFile] = printed.exec(dashboard.stdout()) as RegExpExecArray;
    baseUrl = url as string;
    token = readFileSync(tokenFile as string, 'utf8').trim();
    loginUrl = `${baseUrl}?token=${token}`;
    // playwright gives each launch a fresh temporary profile (its own --user-data-dir).
    browser = await launchChromium(['--disable-quic', '--disable-component-update', '--disable-sync']);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stopProcsThenFake([dashboard, daemon], fake);
  });

  it('never prints or logs the token: the URL and where the token is instead', async () => {
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect(dashboard?.stdout()).not.toContain(token);
    expect(dashboard?.stderr()).not.toContain(token);
    expect(daemon?.stderr()).toContain(
      `dashboard at http://127.0.0.1:${daemonPort}/ (sign in with the token in MAGPIE_DASHBOARD_TOKEN)`,
    );
    expect(`${daemon?.stdout()}${daemon?.stderr()}`).not.toContain('in-daemon-token');
  });

  it('shows a browser without the token a sign-in form, and signs it in with the token', async () => {
    const context = await (browser as Browser).newContext();
    const page = await context.newPage();
    const violations = watchPolicy(page);
    const response = await page.goto(new URL('/sessions', baseUrl).toString());
    expect(response?.status()).toBe(401);
    expect(await page.textContent('body')).toContain('Token required');
    await page.fill('input[name=token]', 'not the token');
    await page.click('button[type=submit]');
    await page.getByText('That is not the token.').waitFor({ timeout: 10_000 });
    await page.fill('input[name=token]', token);
    await page.click('button[type=submit]');
    await page.getByRole('link', { name: 'cli:dash-e2e' }).waitFor({ timeout: 10_000 });
    expect(new URL(page.url()).pathname).toBe('/sessions');
    const cookie = (await context.cookies()).find(
      (c) => c.name === `magpie_dashboard_${new URL(baseUrl).port}`,
    );
    expect(cookie?.httpOnly).toBe(true);
    expect(cookie?.value).toMatch(/^[0-9a-f]{64}$/);
    expect(cookie?.value).not.toBe(token);
    expect(violations).toEqual([]);
    await context.close();
  }, 30_000);

  it('loads with the token and shows the turn that just ran; screenshot saved', async () => {
    const context = await (browser as Browser).newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    const violations = watchPolicy(page);
    const response = await page.goto(loginUrl);
    expect(response?.status()).toBe(200);
    expect(new URL(page.url()).search).toBe(''); // the token left the address bar for an HttpOnly cookie
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name.startsWith('magpie_dashboard_'))?.httpOnly).toBe(true);
    expect(cookies.map((c) => c.value)).not.toContain(token);
    const row = page.locator('#turns tbody tr', { hasText: 'cli:dash-e2e' });
    await row.waitFor({ timeout: 10_000 });
    expect(await row.textContent()).toMatch(/ok.*321.*12/);
    // Token use: today's row adds up both turns (321 in each, none cached, 12 out each).
    const today = page.locator('#usage tbody tr', { hasText: 'today (' }).first();
    await today.waitFor({ timeout: 10_000 });
    expect((await today.locator('td').allTextContents()).slice(1, 6)).toEqual(['642', '0', '0 %', '24', '2']);
    await page.locator('#workers tbody tr', { hasText: 'worker-' }).first().waitFor({ timeout: 10_000 });
    await page.locator('#queues tbody tr', { hasText: 'inbound' }).waitFor({ timeout: 10_000 });
    await page.locator('#schedules tbody tr', { hasText: 'heartbeat' }).waitFor({ timeout: 10_000 });
    mkdirSync(path.join(ROOT, 'test-artifacts'), { recursive: true });
    await page.screenshot({ path: path.join(ROOT, 'test-artifacts', 'dashboard.png'), fullPage: true });

    await page.goto(new URL('/queues', loginUrl).toString());
    await page.getByText('inbound', { exact: false }).first().waitFor({ timeout: 15_000 });
    expect(violations).toEqual([]); // the overview's script and Bull Board run under the policy
    await context.close();
  }, 45_000);

  it('shows a transcript with hostile text as text, never as markup', async () => {
    const context = await (browser as Browser).newContext();
    const page = await context.newPage();
    await page.goto(loginUrl);
    await page.goto(new URL('/sessions', loginUrl).toString());
    await page.getByRole('link', { name: 'cli:notes' }).click();
    await page
      .locator('pre', { hasText: '<script>window.__pwned=1</script>' })
      .first()
      .waitFor({ timeout: 10_000 });
    expect(await page.evaluate('globalThis.__pwned')).toBeUndefined();
    expect(await page.locator('.msg img').count()).toBe(0);
    await context.close();
  }, 30_000);

  it('serves /metrics as Prometheus text with the turns, and the daemon-hosted dashboard wants its token', async () => {
    const base = new URL('/metrics', baseUrl);
    expect((await fetch(base)).status).toBe(401);
    const res = await fetch(base, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      expect(line).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?([0-9.]+(e[+-]?\d+)?|\+Inf|NaN)$/);
    }
    expect(text).toMatch(/^magpie_turns_total\{agent="main",outcome="ok"\} 2$/m);
    expect(text).toMatch(/^magpie_llm_prompt_tokens_total\{agent="main"\} 642$/m);
    expect(text).toMatch(/^magpie_turn_duration_seconds_count\{agent="main"\} 2$/m);

    const inDaemon = `http://127.0.0.1:${daemonPort}/api/turns`;
    expect((await fetch(inDaemon)).status).toBe(401);
    const turns = await fetch(inDaemon, { headers: { authorization: 'Bearer in-daemon-token' } });
    expect(((await turns.json()) as unknown[]).length).toBe(2);
  }, 30_000);
});

/**
 * Collects Content-Security-Policy violations the page reports (none expected),
 * except Bull Board's Google Fonts stylesheet, blocked on purpose: the dashboard
 * loads nothing from other sites (the system fonts are used instead).
 */
function watchPolicy(page: Page): string[] {
  const violations: string[] = [];
  page.on('console', (message) => {
    const text = message.text();
    if (!/Content Security Policy/i.test(text)) return;
    if (/^Loading the stylesheet 'https:\/\/fonts\.googleapis\.com\//.test(text)) return;
    violations.push(text);
  });
  return violations;
}
