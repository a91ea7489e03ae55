/** The dashboard's server-rendered pages escape everything that comes from a chat; their scripts parse. */
import { Script } from 'node:vm';
import { describe, expect, it } from 'vitest';
import {
  agentHref,
  escapeHtml,
  OVERVIEW_SCRIPT,
  overviewPage,
  sessionsPage,
  transcriptPage,
} from '../../../src/ops/dashboard-pages.js';
import { USAGE_ASSETS, USAGE_SCRIPT, usagePage } from '../../../src/ops/usage-page.js';

const EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>';

describe('dashboard pages', () => {
  it('escapes the five HTML characters', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe(
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
    );
  });

  it('shows a transcript with message text, tool calls and names escaped', () => {
    const html = transcriptPage(`cli:${EVIL}`, [
      { role: 'user', content: EVIL },
      {
        role: 'assistant',
        content: null,
        toolCalls: [{ id: '1', name: 'exec', arguments: `{"cmd":"${EVIL}"}` }],
      },
      { role: 'tool', toolCallId: '1', name: EVIL, content: EVIL },
      { role: 'user', content: [{ type: 'text', text: EVIL }] },
    ]);
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain('<img src=x');
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(html).toContain('4 messages');
  });

  it('lists sessions with escaped keys and URL-encoded links', () => {
    const html = sessionsPage([
      { key: `telegram:${EVIL}`, messages: 3, bytes: 2048, updatedAt: new Date(0) },
    ]);
    expect(html).not.toContain('<script>alert');
    expect(html).toContain(`href="/sessions/${encodeURIComponent(`telegram:${EVIL}`)}"`);
    expect(html).toContain('2.0 KiB');
  });

  it('has a token-use table and cached and cost columns in the turn table', () => {
    const html = overviewPage();
    expect(html).toMatch(
      /<table id="usage"><thead><tr><th>what<\/th><th>tokens in<\/th><th>cached<\/th><th>cached %<\/th>/,
    );
    expect(html).toContain('<th>tokens in</th><th>cached</th><th>tokens out</th><th>cost</th>');
  });

  it('serves scripts that parse (a string escape gone wrong in the TypeScript source breaks the page)', () => {
    expect(() => new Script(OVERVIEW_SCRIPT)).not.toThrow();
    expect(() => new Script(USAGE_SCRIPT)).not.toThrow();
  });

  it('has a budget section on the overview, and a usage page loading uPlot, then its own script, from this server', () => {
    expect(overviewPage()).toContain('<h2>Budget</h2><pre id="budget"');
    const html = usagePage();
    expect(html).toContain(`<link rel="stylesheet" href="${USAGE_ASSETS.uplotCss}">`);
    expect(html).toContain(
      `<script src="${USAGE_ASSETS.uplot}"></script><script src="${USAGE_ASSETS.script}"></script>`,
    );
    expect(html).not.toMatch(/<script>|https?:\/\//);
    expect(html).toContain('<a href="/usage">Usage</a>');
  });
});

describe('the agent switcher', () => {
  const agents = [{ id: 'main' }, { id: 'work', name: EVIL }];

  it('is absent with one agent, and the links stay plain', () => {
    const html = overviewPage({ current: 'main', agents: [{ id: 'main' }], path: '/' });
    expect(html).not.toContain('nav class="agents"');
    expect(html).toContain('<a href="/usage">Usage</a>');
    expect(overviewPage()).not.toContain('nav class="agents"');
  });

  it("links every agent's page, marks the one shown, escapes names, and the header's links keep the agent", () => {
    const html = sessionsPage([{ key: 'telegram:1', messages: 1, bytes: 10, updatedAt: new Date(0) }], {
      current: 'work',
      agents,
      path: '/sessions',
    });
    expect(html).toContain('<a href="/sessions?agent=main">main</a>');
    expect(html).toMatch(
      /<a href="\/sessions\?agent=work" class="current" aria-current="page">&lt;script&gt;/,
    );
    expect(html).not.toContain('<script>alert');
    expect(html).toContain('<a href="/?agent=work">Overview</a>');
    expect(html).toContain('<a href="/usage?agent=work">Usage</a>');
    expect(html).toContain('<a href="/queues">Queues</a>');
    expect(html).toContain('href="/sessions/telegram%3A1?agent=work"');
  });

  it('adds ?agent= only for another agent than main, encoded', () => {
    const nav = (current: string) => ({ current, agents, path: '/' });
    expect(agentHref('/usage', nav('main'))).toBe('/usage');
    expect(agentHref('/usage', undefined)).toBe('/usage');
    expect(agentHref('/usage', nav('work'))).toBe('/usage?agent=work');
    expect(agentHref('/x?a=1', nav('a&b'))).toBe('/x?a=1&agent=a%26b');
    expect(usagePage(nav('work'))).toContain('<a href="/sessions?agent=work">Sessions</a>');
  });
});
