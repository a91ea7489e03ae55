/**
 * The web chat in headless Chromium (Debian's /usr/bin/chromium through
 * playwright-core) against the built `magpie start` with the dashboard on,
 * real Redis and the fake OpenAI server writing slowly: no token → 401; a
 * message sent with Enter (Shift+Enter a new line) is answered, the answer
 * growing on the page before it is complete and then shown once, rendered;
 * after a reload the conversation is still there, once; `/stop` during a
 * slow answer stops it; `…` shows while a turn has written nothing yet;
 * `/new` starts a new conversation; a message over 16 KB is marked not sent
 * with the reason; an answer or a message holding `<script>` and
 * `<img onerror>` is shown as text (no dialog, no such element, nothing run);
 * a reminder sent to the chat appears while the page is open, and one sent
 * while it was closed is there when it is opened again; a question's buttons
 * show under it, and a click sends the command as typed (answered once) and
 * disables them in that tab and the chat's other one; the page fits a
 * phone's width, is linked from the dashboard, and never breaks its
 * Content-Security-Policy. Saves a screenshot to test-artifacts/web-chat.png
 * (and, with MAGPIE_UPDATE_SCREENSHOTS=1, to docs/web-chat.png, which the
 * README shows).
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../../src/app/config.js';
import { Bus } from '../../src/bus/bus.js';
import { silentLogger } from '../../src/log/index.js';
import { launchChromium } from '../fakes/browser.js';
import { stopProcsThenFake } from '../fakes/daemon.js';
import { type FakeOpenAI, type FakeReply, lastUserText, startFakeOpenAI } from '../fakes/openai-server.js';
import { freePort } from '../fakes/redis-server.js';
import { waitFor } from '../fakes/wait-for.js';
import { build, daemonEnv, magpie, type Proc, ROOT, tempWorkspace } from './daemon-helpers.js';

const TOKEN = `web-e2e-${randomUUID()}`;
const STREAMED =
  'Here is the **plan**, written slowly:\n\n1. read the notes\n2. write the summary\n\n```sh\nmagpie status\n```\nDone: see https://example.com/docs for more.';
const SLOW = Array.from({ length: 30 }, (_, i) => `Slow sentence ${i + 1}.`).join(' ');
const HOSTILE = 'Careful: <script>alert(1)</script> and <img src=x onerror="window.__pwned=1"> end.';
const DEMO =
  "Sure — here is a small **Python** function:\n\n```python\ndef greet(name):\n    return f'Hello, {name}!'\n```\n\nCall it with `greet('magpie')`. More in the *README*.";

describe('web chat in a browser', () => {
  let fake: FakeOpenAI;
  let daemon: Proc | undefined;
  let browser: Browser | undefined;
  let bus: Bus | undefined;
  let base: string;
  let prefix: string;

  beforeAll(async () => {
    build();
    fake = await startFakeOpenAI({
      responder: (req): FakeReply => {
        const text = lastUserText(req);
        if (text.includes('stream please')) return { content: STREAMED, pieces: 8, pieceDelayMs: 300 };
        if (text.includes('slow please')) return { content: SLOW, pieces: 30, pieceDelayMs: 400 };
        if (text.includes('hostile please')) return { content: HOSTILE };
        if (text.includes('demo please')) return { content: DEMO, pieces: 4, pieceDelayMs: 100 };
        if (text.includes('pause please')) return { content: 'after a pause', delayMs: 1_500 };
        return { content: `echo: ${text.slice(-60)}` };
      },
    });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    prefix = `e2e-${randomUUID()}`;
    daemon = magpie(['start'], {
      ...daemonEnv({
        REDIS_URL: inject('redisUrl'),
        OPENAI_BASE_URL: fake.baseURL,
        MAGPIE_WORKSPACE: tempWorkspace(),
        MAGPIE_QUEUE_PREFIX: prefix,
      }),
      MAGPIE_DASHBOARD_PORT: String(port),
      MAGPIE_DASHBOARD_TOKEN: TOKEN,
    });
    await daemon.waitFor(/magpie is running/, 20_000);
    bus = await Bus.connect({
      config: parseConfig({ REDIS_URL: inject('redisUrl'), MAGPIE_QUEUE_PREFIX: prefix }),
      logger: silentLogger(),
    });
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await bus?.close();
    await stopProcsThenFake([daemon], fake);
  });

  /** A signed-in page on `/chat?name=<chat>`, its CSP violations and dialogs recorded. */
  async function openChat(chat: string, viewport = { width: 900, height: 720 }) {
    const context: BrowserContext = await (browser as Browser).newContext({ viewport });
    const page = await context.newPage();
    const violations: string[] = [];
    const dialogs: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    const response = await page.goto(`${base}/chat?name=${chat}&token=${TOKEN}`);
    expect(response?.status()).toBe(200);
    expect(new URL(page.url()).search).toBe(`?name=${chat}`);
    await page.getByText('connected', { exact: true }).waitFor({ timeout: 10_000 });
    return { context, page, violations, dialogs };
  }

  /** Types into the composer and presses Enter (lines joined with Shift+Enter). */
  async function say(page: Page, ...lines: string[]) {
    const input = page.locator('#input');
    await input.click();
    for (const [i, line] of lines.entries()) {
      if (i > 0) await input.press('Shift+Enter');
      await input.pressSequentially(line, { delay: 0 });
    }
    await input.press('Enter');
  }

  const assistantTexts = (page: Page) => page.locator('.msg.assistant:not(.typing)').allTextContents();

  it('answers 401 without the token: the page, its events and its posts', async () => {
    const context = await (browser as Browser).newContext();
    const page = await context.newPage();
    const response = await page.goto(`${base}/chat`);
    expect(response?.status()).toBe(401);
    expect(await page.textContent('body')).toContain('Token required');
    const events = await context.request.get(`${base}/chat/events?chat=x`);
    expect(events.status()).toBe(401);
    const posted = await context.request.post(`${base}/chat/messages`, { data: { chat: 'x', text: 'hi' } });
    expect(posted.status()).toBe(401);
    await context.close();
  });

  it("is linked from the dashboard's header, and links back to it", async () => {
    const context = await (browser as Browser).newContext();
    const page = await context.newPage();
    await page.goto(`${base}/?token=${TOKEN}`);
    await page.getByRole('link', { name: 'Chat', exact: true }).click();
    await page.getByText('connected', { exact: true }).waitFor({ timeout: 10_000 });
    expect(new URL(page.url()).pathname).toBe('/chat');
    await page.getByRole('link', { name: 'Dashboard', exact: true }).click();
    await page.locator('#workers').waitFor({ timeout: 10_000 });
    await context.close();
  }, 30_000);

  it('sends with Enter (Shift+Enter a new line) and shows the answer growing, then whole and rendered', async () => {
    const { context, page, violations } = await openChat('e2e');
    await say(page, 'first line', 'stream please');
    await expect
      .poll(() => page.locator('.msg.user').allTextContents())
      .toEqual(['first line\nstream please']);
    const live = page.locator('.msg.assistant.live');
    await live.waitFor({ timeout: 20_000 });
    const partial = (await live.textContent()) ?? '';
    // Shown before the model wrote its last words.
    expect(partial.length).toBeGreaterThan(0);
    expect(partial).not.toContain('for more.');
    // The final message replaces the growing one in place: one bubble, no longer live.
    const final = page.locator('.msg.assistant:not(.live)', { hasText: 'Done: see' });
    await final.waitFor({ timeout: 20_000 });
    expect(await page.locator('.msg.live').count()).toBe(0);
    expect(await assistantTexts(page)).toHaveLength(1);
    expect(await final.locator('strong').textContent()).toBe('plan');
    expect(await final.locator('pre code').textContent()).toBe('magpie status');
    const link = final.locator('a');
    expect(await link.getAttribute('href')).toBe('https://example.com/docs');
    expect(await link.getAttribute('rel')).toBe('noopener noreferrer');
    expect(await link.getAttribute('target')).toBe('_blank');
    expect(violations).toEqual([]);
    await context.close();
  }, 60_000);

  it('shows the conversation again after a reload, each message once', async () => {
    const { context, page, violations } = await openChat('e2e');
    await page.locator('.msg.assistant:not(.live)', { hasText: 'Done: see' }).waitFor({ timeout: 10_000 });
    await page.reload();
    await page.getByText('connected', { exact: true }).waitFor({ timeout: 10_000 });
    expect(await page.locator('.msg.user').allTextContents()).toEqual(['first line\nstream please']);
    const texts = await assistantTexts(page);
    expect(texts).toHaveLength(1);
    expect(texts[0]).toContain('Done: see');
    expect(await page.locator('.msg.assistant strong').first().textContent()).toBe('plan');
    expect(violations).toEqual([]);
    await context.close();
  }, 30_000);

  it('/stop during a slow answer stops it', async () => {
    const { context, page } = await openChat('stopper');
    await say(page, 'slow please');
    await page.locator('.msg.assistant.live').waitFor({ timeout: 20_000 });
    await say(page, '/stop');
    await page.locator('.msg.assistant:not(.live)', { hasText: 'Stopping.' }).waitFor({ timeout: 10_000 });
    await page.locator('.msg.assistant:not(.live)', { hasText: 'Stopped.' }).waitFor({ timeout: 20_000 });
    // The turn is over: a next message is answered, and the slow answer never finished.
    await say(page, 'are you there');
    await page.locator('.msg.assistant:not(.live)', { hasText: 'echo: ' }).waitFor({ timeout: 20_000 });
    expect((await assistantTexts(page)).join('\n')).not.toContain('Slow sentence 30.');
    await context.close();
  }, 60_000);

  it('shows <script> and <img onerror> from the model and the user as text; nothing runs', async () => {
    const { context, page, violations, dialogs } = await openChat('hostile');
    const mine = '<img src=x onerror="window.__pwned=2"><script>alert(2)</script>';
    await say(page, mine);
    await say(page, 'hostile please');
    const answer = page.locator('.msg.assistant:not(.live)', { hasText: 'Careful:' });
    await answer.waitFor({ timeout: 20_000 });
    expect(await answer.textContent()).toBe(HOSTILE);
    expect(await page.locator('.msg.user').first().textContent()).toBe(mine);
    expect(await page.locator('#log script, #log img, #log [onerror]').count()).toBe(0);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    await page.reload();
    await page.getByText('connected', { exact: true }).waitFor({ timeout: 10_000 });
    expect(await page.locator('.msg.assistant:not(.live)', { hasText: 'Careful:' }).textContent()).toBe(
      HOSTILE,
    );
    expect(await page.locator('#log script, #log img, #log [onerror]').count()).toBe(0);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(violations).toEqual([]);
    await context.close();
  }, 60_000);

  it('shows … while a turn runs and nothing is written yet, gone with the answer', async () => {
    const { context, page } = await openChat('typing');
    await say(page, 'pause please');
    const typing = page.locator('.msg.typing');
    await typing.waitFor({ timeout: 10_000 });
    expect(await typing.textContent()).toBe('\u2026');
    await page
      .locator('.msg.assistant:not(.live)', { hasText: 'after a pause' })
      .waitFor({ timeout: 20_000 });
    await typing.waitFor({ state: 'detached', timeout: 5_000 });
    await context.close();
  }, 30_000);

  it('/new starts a new conversation: after a reload the old one is no longer shown', async () => {
    const { context, page } = await openChat('renewed');
    await say(page, 'remember the old talk');
    await page
      .locator('.msg.assistant:not(.live)', { hasText: 'remember the old talk' })
      .waitFor({ timeout: 20_000 });
    await say(page, '/new');
    await page
      .locator('.msg.assistant:not(.live)', { hasText: 'Started a new conversation.' })
      .waitFor({ timeout: 20_000 });
    await page.reload();
    await page.getByText('connected', { exact: true }).waitFor({ timeout: 10_000 });
    expect(await page.locator('#log').textContent()).not.toContain('remember the old talk');
    await context.close();
  }, 45_000);

  it('shows a reminder that came while the page was closed when it is opened again, and after reloads', async () => {
    const context = await (browser as Browser).newContext();
    const page = await context.newPage();
    await page.goto(`${base}/chat?name=away&token=${TOKEN}`);
    await page.getByText('connected', { exact: true }).waitFor({ timeout: 10_000 });
    await say(page, 'see you later');
    await page
      .locator('.msg.assistant:not(.live)', { hasText: 'see you later' })
      .waitFor({ timeout: 20_000 });
    await page.close();
    await bus?.publishOutbound({
      id: `reminder-${randomUUID()}`,
      channel: 'web',
      chatId: 'away',
      content: '⏰ Water the plants.',
      kind: 'message',
    });
    await waitFor(async () => ((await bus?.readWebEvents('away', undefined)) ?? []).length === 3, 15_000);
    const again = await context.newPage();
    for (let visit = 0; visit < 2; visit++) {
      if (visit === 0) await again.goto(`${base}/chat?name=away`);
      else await again.reload();
      await again.getByText('connected', { exact: true }).waitFor({ timeout: 10_000 });
      const texts = await again.locator('.msg').allTextContents();
      expect(texts).toEqual([
        'see you later',
        expect.stringContaining('see you later'),
        '⏰ Water the plants.',
      ]);
    }
    await context.close();
  }, 45_000);

  it('marks a message over the size limit as not sent, with the reason, and sends nothing', async () => {
    const { context, page } = await openChat('oversized');
    const requests = fake.requests.length;
    await page.fill('#input', 'x'.repeat(17 * 1024));
    await page.locator('#input').press('Enter');
    const failed = page.locator('.msg.user.failed');
    await failed.waitFor({ timeout: 10_000 });
    expect(await failed.locator('.note').textContent()).toBe('not sent: message too large (at most 16 KB)');
    // The chat goes on: the next message is answered (and was the only one the model saw).
    await say(page, 'small one');
    await page.locator('.msg.assistant:not(.live)', { hasText: 'small one' }).waitFor({ timeout: 20_000 });
    expect(fake.requests.length).toBe(requests + 1);
    await context.close();
  }, 30_000);

  it('shows a reminder sent to the chat while the page is open', async () => {
    const { context, page } = await openChat('reminded');
    await bus?.publishOutbound({
      id: `reminder-${randomUUID()}`,
      channel: 'web',
      chatId: 'reminded',
      content: 'Reminder: stand up and stretch.',
      kind: 'message',
    });
    await page
      .locator('.msg.assistant:not(.live)', { hasText: 'Reminder: stand up' })
      .waitFor({ timeout: 15_000 });
    await context.close();
  }, 30_000);

  it("shows a question's buttons; a click sends the command as typed and disables them, here and in the chat's other tab", async () => {
    const first = await openChat('approval');
    const second = await openChat('approval');
    await bus?.publishOutbound({
      id: `ask-${randomUUID()}`,
      channel: 'web',
      chatId: 'approval',
      content: 'magpie wants to run `git push`. Allow it?',
      kind: 'message',
      actions: [
        { label: 'Allow once', command: '/approve K7QF2' },
        { label: 'Deny', command: '/deny K7QF2' },
      ],
    });
    const buttons = (page: Page) => page.locator('.msg.assistant .actions button');
    const disabled = (page: Page) =>
      buttons(page).evaluateAll((list) => list.map((b) => (b as unknown as { disabled: boolean }).disabled));
    for (const { page } of [first, second]) {
      await expect
        .poll(() => buttons(page).allTextContents(), { timeout: 15_000 })
        .toEqual(['Allow once', 'Deny']);
      expect(await disabled(page)).toEqual([false, false]);
    }
    await first.page.getByRole('button', { name: 'Deny', exact: true }).click();
    // `/deny` is answered on the way in (no question K7QF2 waits in this chat: the bus says so).
    await first.page
      .locator('.msg.assistant:not(.live)', { hasText: 'No question K7QF2 is waiting in this chat.' })
      .waitFor({ timeout: 20_000 });
    for (const { page } of [first, second]) {
      expect(await page.locator('.msg.user').allTextContents()).toEqual(['/deny K7QF2']);
      await expect.poll(() => disabled(page), { timeout: 10_000 }).toEqual([true, true]);
    }
    expect(fake.requests.map(lastUserText).filter((t) => t.includes('/deny K7QF2'))).toHaveLength(0);
    expect([...first.violations, ...second.violations]).toEqual([]);
    await first.context.close();
    await second.context.close();
  }, 60_000);

  it("fits a phone's width; screenshot saved", async () => {
    const phone = await openChat('phone', { width: 390, height: 760 });
    await say(phone.page, 'hello from a phone');
    await phone.page.locator('.msg.assistant:not(.live)', { hasText: 'echo:' }).waitFor({ timeout: 20_000 });
    const widths = await phone.page.evaluate<number[]>(
      '[document.documentElement.scrollWidth, window.innerWidth]',
    );
    expect(widths[0]).toBeLessThanOrEqual(widths[1] as number);
    await phone.context.close();

    const { context, page, violations } = await openChat('demo', { width: 820, height: 560 });
    await say(page, 'Write me a tiny Python greeting function, demo please');
    await page.locator('.msg.assistant:not(.live)', { hasText: 'More in the' }).waitFor({ timeout: 20_000 });
    // test-artifacts/ every run; the README's copy in docs/ only when asked (MAGPIE_UPDATE_SCREENSHOTS=1).
    mkdirSync(path.join(ROOT, 'test-artifacts'), { recursive: true });
    await page.screenshot({ path: path.join(ROOT, 'test-artifacts', 'web-chat.png') });
    if (process.env.MAGPIE_UPDATE_SCREENSHOTS === '1')
      await page.screenshot({ path: path.join(ROOT, 'docs', 'web-chat.png') });
    expect(violations).toEqual([]);
    await context.close();
  }, 60_000);
});
