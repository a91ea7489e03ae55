/**
 * What the operator sees of the budget, on the real stack: turns of two chats
 * over three days (an injected clock, Europe/Berlin) through buildAgent's
 * agent, the fake OpenAI server reporting usage, and the budget's Redis
 * store; then the dashboard in headless Chromium (Debian's chromium through
 * playwright-core) draws the usage charts with uPlot from those figures, the
 * overview and `magpie status` (text and --json) show spend against each
 * limit. Before the first turn the usage page says "no usage yet".
 *
 * `MAGPIE_DOCS_SCREENSHOTS=1 npx vitest run test/integration/budget/usage-dashboard.test.ts`
 * also rewrites docs/images/usage-charts.png (never in a plain run).
 */
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { periodOf } from '../../../src/budget/budget.js';
import { budgetView, formatMoney, readUsageSummary } from '../../../src/budget/report.js';
import type { Config } from '../../../src/config/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { type Dashboard, startDashboard } from '../../../src/ops/dashboard-server.js';
import { collectStatus } from '../../../src/ops/status.js';
import { formatStatus } from '../../../src/ops/status-format.js';
import type { UsageChartData } from '../../../src/ops/usage-charts.js';
import { zonedWallTimeToUtc } from '../../../src/time/schedule.js';
import { launchChromium } from '../../fakes/browser.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../fakes/openai-server.js';
import { inbound, waitFor } from '../bus/helpers.js';
import { budgetConfig, removeWorkspace, startBudgetWorker, startGateway, TestClock } from './harness.js';

const ZONE = 'Europe/Berlin';
const PRICES = 'gpt-4o-mini=1/0.5/2';
const LIMITS = { MAGPIE_BUDGET_DAILY: '2', MAGPIE_BUDGET_CHAT_DAILY: '0.50', MAGPIE_BUDGET_MONTHLY: '30' };
const TOKEN = 'usage-dashboard-token-0123456789abcdef';
/** Noon today in Berlin, on the real date (so `magpie status`, on the real clock, reads the same day). */
const TODAY = periodOf(Date.now(), ZONE).date;
const [Y, M, D] = TODAY.split('-').map(Number) as [number, number, number];
const NOON = zonedWallTimeToUtc({ year: Y, month: M, day: D, hour: 12, minute: 0, second: 0 }, ZONE);
const DAY_MS = 86_400_000;

/**
 * Each call: 100k prompt tokens (40k cached) and 25k completion tokens,
 * at 1 / 0.5 / 2 per million: (60k + 20k + 50k) / 1M = 0.13.
 */
const USAGE = {
  prompt_tokens: 100_000,
  completion_tokens: 25_000,
  prompt_tokens_details: { cached_tokens: 40_000 },
};

describe('usage on the dashboard and in status', () => {
  let fake: FakeOpenAI;
  let workspace: string | undefined;
  let config: Config;
  let browser: Browser | undefined;
  let dashboard: Dashboard | undefined;
  const clock = new TestClock(NOON);
  const closers: Array<() => Promise<void>> = [];
  let worker: Awaited<ReturnType<typeof startBudgetWorker>>;
  let emptyPage: { text: string; canvases: number; violations: string[] };

  beforeAll(async () => {
    fake = await startFakeOpenAI({ responder: () => ({ content: 'answer', usage: USAGE }) });
    const made = await budgetConfig(fake, { MAGPIE_PRICES: PRICES, ...LIMITS });
    config = made.config;
    workspace = made.workspace;
    const gateway = await startGateway(config);
    closers.push(() => gateway.close());
    worker = await startBudgetWorker(config, clock);
    closers.push(() => worker.close());
    dashboard = await startDashboard({
      reader: worker.bus.opsReader,
      url: worker.bus.url,
      prefix: worker.bus.prefix,
      workspace: made.workspace,
      logger: silentLogger(),
      token: TOKEN,
      timezone: ZONE,
      budget: budgetView(worker.budget),
    });
    browser = await launchChromium(['--disable-quic', '--disable-component-update', '--disable-sync']);

    // Before any call: the page renders and says so.
    const context = await browser.newContext();
    const page = await context.newPage();
    const violations = watchPolicy(page);
    await page.goto(`${dashboard.url}usage?token=${TOKEN}`);
    await page.locator('body[data-usage-loaded=true]').waitFor({ timeout: 10_000 });
    emptyPage = {
      text: (await page.locator('#usage-empty:visible').textContent()) ?? '',
      canvases: await page.locator('canvas').count(),
      violations,
    };
    await context.close();

    // Two days ago b1 once; yesterday b1 and b2; today b1 twice and b2 once.
    const replies = () => gateway.channel.sent.filter((m) => m.kind === 'reply').length;
    const turn = async (at: number, chat: string) => {
      clock.ms = at;
      const before = replies();
      await worker.bus.publishInbound(inbound(chat, `hello from ${chat}`));
      await waitFor(() => replies() > before, 15_000, `the reply in ${chat}`);
    };
    await turn(NOON - 2 * DAY_MS, 'b1');
    await turn(NOON - DAY_MS, 'b1');
    await turn(NOON - DAY_MS, 'b2');
    await turn(NOON, 'b1');
    await turn(NOON, 'b1');
    await turn(NOON, 'b2');
    clock.ms = NOON + 60_000;
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await dashboard?.close();
    for (const close of closers.splice(0).reverse()) await close();
    await fake?.close();
    await removeWorkspace(workspace);
  });

  it('renders the usage page with no usage yet: the line, no chart, nothing against the policy', () => {
    expect(emptyPage.text).toContain('no usage yet');
    expect(emptyPage.canvases).toBe(0);
    expect(emptyPage.violations).toEqual([]);
  });

  it('draws cost, tokens, cached share and calls per hour with the recorded figures, by chat and by model', async () => {
    expect(fake.requests).toHaveLength(6);
    // What the store recorded, as `magpie usage --json` reads it.
    const recorded = await readUsageSummary(worker.budget, { days: 14 });
    const today = recorded.days.at(-1)!;
    expect(today.bySession['test:b1']?.cost).toBeCloseTo(0.26, 9);
    expect(today.bySession['test:b2']?.cost).toBeCloseTo(0.13, 9);

    const context = await (browser as Browser).newContext({ viewport: { width: 1100, height: 1300 } });
    const page = await context.newPage();
    const violations = watchPolicy(page);
    await page.goto(`${dashboard!.url}usage?token=${TOKEN}`);
    for (const id of ['cost-chart', 'tokens-chart', 'cached-chart', 'calls-chart']) {
      await page.locator(`#${id}[data-drawn=true] canvas`).waitFor({ timeout: 10_000 });
    }
    expect(await page.locator('#usage-empty').isHidden()).toBe(true);

    // The legends name the chats (and the daily limit) and read today's figures.
    expect(await legend(page, 'cost-chart')).toEqual({
      day: TODAY,
      'test:b1': formatMoney(today.bySession['test:b1']!.cost),
      'test:b2': formatMoney(today.bySession['test:b2']!.cost),
      'daily limit': '2.00',
    });
    expect(await legend(page, 'cost-chart')).toMatchObject({ 'test:b1': '0.26', 'test:b2': '0.13' });
    expect(await legend(page, 'tokens-chart')).toEqual({
      day: TODAY,
      'test:b1': '250,000',
      'test:b2': '125,000',
    });
    expect(await legend(page, 'cached-chart')).toEqual({ day: TODAY, 'cached share': '40 %' });
    expect(await legend(page, 'calls-chart')).toEqual({ hour: `${TODAY} 12`, 'model calls': '3' });

    // The pointer on two days ago's bar reads that day: b1's one call, b2 nothing.
    const twoDaysAgo = recorded.days.at(-3)!;
    await hoverDay(page, 'cost-chart', 11, 14);
    expect(await legend(page, 'cost-chart')).toMatchObject({
      day: twoDaysAgo.date,
      'test:b1': '0.13',
      'test:b2': '0.00',
    });

    // Stacked by model: the one model, all of today's cost.
    await page.selectOption('#stack-by', 'model');
    await page.locator('#cost-chart[data-drawn=true] canvas').waitFor();
    expect(await legend(page, 'cost-chart')).toEqual({
      day: TODAY,
      'gpt-4o-mini': '0.39',
      'daily limit': '2.00',
    });

    if (process.env.MAGPIE_DOCS_SCREENSHOTS === '1') {
      await page.selectOption('#stack-by', 'chat');
      await page.locator('#calls-chart[data-drawn=true] canvas').waitFor();
      const file = path.resolve('docs/images/usage-charts.png');
      mkdirSync(path.dirname(file), { recursive: true });
      await page.locator('main').screenshot({ path: file });
    }
    expect(violations).toEqual([]);
    await context.close();
  }, 45_000);

  it('answers /api/usage only with the token, with the same figures', async () => {
    const url = `${dashboard!.url}api/usage?days=3`;
    expect((await fetch(url)).status).toBe(401);
    const res = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    const data = (await res.json()) as UsageChartData;
    expect(data.days).toHaveLength(3);
    expect(data.any).toBe(true);
    expect(data.cost.byChat.map((s) => s.label)).toEqual(['test:b1', 'test:b2']);
    expect(data.tokens.byModel).toEqual([{ label: 'gpt-4o-mini', values: [125_000, 250_000, 375_000] }]);
    expect(data.cachedShare).toEqual([40, 40, 40]);
    expect(data.calls.reduce((a, b) => a + b, 0)).toBe(6);
    const asset = await fetch(`${dashboard!.url}assets/uplot.js`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(asset.headers.get('content-type')).toContain('text/javascript');
    expect(await asset.text()).toContain('uPlot');
    expect((await fetch(`${dashboard!.url}assets/uplot.js`)).status).toBe(401);
  });

  it('shows spend against each limit and the per-minute guard in status (text, --json) and on the overview', async () => {
    const status = await collectStatus({
      reader: worker.bus.opsReader,
      url: worker.bus.url,
      prefix: worker.bus.prefix,
      workspace: workspace!,
      timezone: ZONE,
      budget: budgetView(worker.budget),
    });
    expect(status.budget).toEqual({
      timezone: ZONE,
      today: { cost: expect.closeTo(0.39, 9), tokens: 375_000 },
      thisMonth: { cost: expect.any(Number) },
      limits: [
        { name: 'daily', limit: 2, spent: expect.closeTo(0.39, 9) },
        { name: 'monthly', limit: 30, spent: expect.any(Number) },
        { name: 'chat_daily', limit: 0.5, spent: expect.closeTo(0.26, 9), chat: 'test:b1' },
      ],
      maxCallsPerMinute: 30,
    });
    // This month: today's 0.39, and the days before when they fall in this month.
    const inMonth = [2, 1].filter((n) => periodOf(NOON - n * DAY_MS, ZONE).month === TODAY.slice(0, 7));
    const month = 0.39 + inMonth.reduce((sum, n) => sum + (n === 2 ? 0.13 : 0.26), 0);
    expect(status.budget?.thisMonth.cost).toBeCloseTo(month, 9);
    const text = formatStatus(status);
    const lines = [
      `Budget     spent against the limits (${ZONE}, calls in flight included)`,
      '  today          0.39 of 2.00 (20%)',
      `  this month     ${formatMoney(month)} of 30.00 (${Math.round((100 * month) / 30)}%)`,
      '  one chat today 0.26 of 0.50 (52%), the most: test:b1',
      '  calls          at most 30 model calls a minute per chat',
    ];
    expect(text).toContain(lines.join('\n'));

    // `magpie status --json` (built CLI, real clock: the same day) reads the same counters.
    const cli = await promisify(execFile)(
      process.execPath,
      [path.resolve('dist/cli/bin.js'), 'status', '--json'],
      {
        cwd: os.tmpdir(),
        env: {
          PATH: process.env.PATH ?? '',
          REDIS_URL: worker.bus.url,
          MAGPIE_QUEUE_PREFIX: config.redis.prefix,
          MAGPIE_WORKSPACE: workspace!,
          MAGPIE_TIMEZONE: ZONE,
          MAGPIE_PRICES: PRICES,
          ...LIMITS,
        },
      },
    );
    const json = JSON.parse(cli.stdout);
    expect(json.budget.limits[0]).toEqual({ name: 'daily', limit: 2, spent: 0.39 });
    expect(json.budget.limits[2]).toEqual({ name: 'chat_daily', limit: 0.5, spent: 0.26, chat: 'test:b1' });
    expect(json.budget.maxCallsPerMinute).toBe(30);

    // The overview prints the same lines.
    const context = await (browser as Browser).newContext();
    const page = await context.newPage();
    await page.goto(`${dashboard!.url}?token=${TOKEN}`);
    await page.locator('#budget', { hasText: 'today' }).waitFor({ timeout: 10_000 });
    expect(await page.locator('#budget').textContent()).toBe(lines.join('\n'));
    await context.close();
  }, 30_000);
});

/** A chart's legend as `{ label: value }` (uPlot fills it with textContent). */
async function legend(page: Page, chart: string): Promise<Record<string, string>> {
  const rows = page.locator(`#${chart} .u-legend tr.u-series`);
  const out: Record<string, string> = {};
  for (const row of await rows.all()) {
    out[(await row.locator('.u-label').textContent()) ?? ''] =
      (await row.locator('.u-value').textContent()) ?? '';
  }
  return out;
}

/** Moves the pointer over bar `index` of `count` (the x scale runs from -0.6 to count - 0.4). */
async function hoverDay(page: Page, chart: string, index: number, count: number): Promise<void> {
  const box = (await page.locator(`#${chart} .u-over`).boundingBox())!;
  const x = box.x + (box.width * (index + 0.6)) / (count - 1 + 1.2);
  await page.mouse.move(x, box.y + box.height / 2);
}

/** Content-Security-Policy violations the page reports (none expected). */
function watchPolicy(page: Page): string[] {
  const violations: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
  return violations;
}
