/**
 * The web chat's routes on the real dashboard server and real Redis: the
 * token, Host and CSP rules hold for /chat as for the rest of the dashboard;
 * a message must be same-origin JSON under the size limit (cross-site,
 * form-typed, cookie-only-without-browser-headers and oversized posts are
 * refused, each with one line); an accepted one reaches the session's
 * mailbox; /stop is answered at once; the event stream delivers WebChannel's
 * messages, live snapshots and typing, resumes after Last-Event-ID with only
 * what was missed (a message sent while no page was open included), sends
 * heartbeats and reads the stream again at each (a lost publish arrives late); the history holds the session's user and assistant texts only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Router } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bus } from '../../../src/bus/bus.js';
import { createWebChatRouter } from '../../../src/channels/web/routes.js';
import { WebChannel } from '../../../src/channels/web/web-channel.js';
import { hasCode } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { type Dashboard, startDashboard } from '../../../src/ops/dashboard-server.js';
import { JsonlSessionStore } from '../../../src/sessions/jsonl-store.js';
import {
  openEvents,
  pageHeaders,
  type ReceivedEvent,
  signedInCookie,
  webRequest,
} from '../../fakes/web-client.js';
import { testConfig } from '../bus/helpers.js';

const TOKEN = 'web-chat-test-token';
const logger = silentLogger();

describe('web chat routes', () => {
  let bus: Bus;
  let dashboard: Dashboard;
  let channel: WebChannel;
  let sessions: JsonlSessionStore;
  let workspace: string;
  let port: number;

  beforeAll(async () => {
    bus = await Bus.connect({ config: testConfig(), logger });
    workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-web-'));
    sessions = new JsonlSessionStore({ dir: path.join(workspace, 'sessions'), logger });
    dashboard = await dashboardOn(bus, createWebChatRouter({ bus, sessions, logger, heartbeatMs: 100 }));
    port = dashboard.port;
    channel = new WebChannel({ bus, logger });
  });

  /** A dashboard on `bus` with the token, the web chat mounted when given. */
  const dashboardOn = (on: Bus, chat?: Router) =>
    startDashboard({
      reader: on.opsReader,
      url: on.url,
      prefix: on.prefix,
      workspace,
      logger,
      token: TOKEN,
      ...(chat ? { chat } : {}),
    });

  afterAll(async () => {
    await dashboard?.close();
    await bus?.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  const post = (body: unknown, headers: Record<string, string> = pageHeaders(port, TOKEN)) =>
    webRequest(port, 'POST', '/chat/messages', {
      headers,
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const cookie = () => ({ cookie: signedInCookie(port, TOKEN) });
  const types = (events: ReceivedEvent[]) => events.map((e) => e.event);

  it('answers 401 to every /chat route without the token, and serves them with it', async () => {
    for (const [method, route] of [
      ['GET', '/chat'],
      ['GET', '/chat/app.js'],
      ['GET', '/chat/events?chat=a'],
      ['GET', '/chat/history?chat=a'],
      ['POST', '/chat/messages'],
    ] as const) {
      const answer = await webRequest(port, method, route, {
        headers: { 'content-type': 'application/json', origin: `http://127.0.0.1:${port}` },
        body: method === 'POST' ? JSON.stringify({ chat: 'a', text: 'hi' }) : undefined,
      });
      expect(answer.status, route).toBe(401);
    }
    const wrong = await webRequest(port, 'GET', '/chat', { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    const page = await webRequest(port, 'GET', '/chat', { headers: cookie() });
    expect(page.status).toBe(200);
    expect(page.body).toContain('<script type="module" src="/chat/app.js"></script>');
  });

  it('answers 421 to a foreign Host even with the token (DNS rebinding)', async () => {
    for (const host of ['evil.example', `evil.example:${port}`, `127.0.0.1.evil.example:${port}`]) {
      const answer = await webRequest(port, 'GET', '/chat', { headers: { ...cookie(), host } });
      expect(answer.status, host).toBe(421);
      const posted = await post({ chat: 'a', text: 'hi' }, { ...pageHeaders(port, TOKEN), host });
      expect(posted.status, host).toBe(421);
    }
  });

  it('serves the page, its script, renderer and style under the strict CSP with no inline script', async () => {
    const page = await webRequest(port, 'GET', '/chat', { headers: cookie() });
    const csp = page.headers['content-security-policy'];
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("script-src 'self' 'unsafe-inline'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(page.body).toContain('name="viewport"');
    expect(page.body.match(/<script[^>]*>/g)).toEqual(['<script type="module" src="/chat/app.js">']);
    for (const [asset, type] of [
      ['/chat/app.js', 'text/javascript'],
      ['/chat/render.js', 'text/javascript'],
      ['/chat/app.css', 'text/css'],
    ] as const) {
      const answer = await webRequest(port, 'GET', asset, { headers: cookie() });
      expect(answer.status, asset).toBe(200);
      expect(answer.headers['content-type'], asset).toContain(type);
      expect(answer.headers['content-security-policy']).toBe(csp);
    }
  });

  it('refuses cross-site posts: another Origin, a look-alike Origin, Sec-Fetch-Site cross-site, a form type, a cookie without browser headers', async () => {
    const base = pageHeaders(port, TOKEN);
    const cases: Array<[string, Record<string, string>, number]> = [
      ['other origin', { ...base, origin: 'https://evil.example' }, 403],
      ['look-alike origin', { ...base, origin: `http://127.0.0.1:${port}.evil.example` }, 403],
      ['other port', { ...base, origin: `http://127.0.0.1:${port + 1}` }, 403],
      ['null origin', { ...base, origin: 'null' }, 403],
      ['same origin, cross-site fetch', { ...base, 'sec-fetch-site': 'cross-site' }, 403],
      ['same-site', { ...base, 'sec-fetch-site': 'same-site' }, 403],
      [
        'no origin, cross-site',
        { ...cookie(), 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' },
        403,
      ],
      ['cookie only, no browser headers', { ...cookie(), 'content-type': 'application/json' }, 403],
      ['form type', { ...base, 'content-type': 'application/x-www-form-urlencoded' }, 415],
      ['text/plain', { ...base, 'content-type': 'text/plain' }, 415],
      ['no type', { cookie: base.cookie as string, origin: base.origin as string }, 415],
    ];
    const mailbox = bus.mailbox('web:csrf');
    for (const [name, headers, status] of cases) {
      const answer = await post({ chat: 'csrf', text: `from ${name}` }, headers);
      expect(answer.status, name).toBe(status);
      expect(answer.body.trim().split('\n'), name).toHaveLength(1);
    }
    expect(await mailbox.length()).toBe(0);
    // A script with the token itself (no cookie, no browser) may post.
    const scripted = await post(
      { chat: 'csrf', text: 'from a script' },
      { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    );
    expect(scripted.status).toBe(202);
    expect(await mailbox.length()).toBe(1);
  });

  it('answers 413 with one line to a message over 16 KB, 400 to empty text, bad ids and bad JSON', async () => {
    const big = await post({ chat: 'size', text: 'x'.repeat(17 * 1024) });
    expect(big.status).toBe(413);
    expect(big.body).toBe('magpie chat: message too large (at most 16 KB)');
    for (const [body, line] of [
      [{ chat: 'size', text: '   \n ' }, 'the message is empty'],
      [{ chat: 'size' }, 'the message is empty'],
      [{ chat: 'size', text: 42 }, 'the message is empty'],
      [{ chat: '../etc', text: 'hi' }, 'chat must be'],
      [{ chat: ['size'], text: 'hi' }, 'chat must be'],
      [{ chat: 'size', text: 'hi', id: 'a b' }, 'id must be'],
      ['{"chat":', 'not JSON'],
      ['"just a string"', 'not JSON'],
    ] as const) {
      const answer = await post(body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body, JSON.stringify(body)).toContain(line);
    }
    expect(await bus.mailbox('web:size').length()).toBe(0);
    const fits = await post({ chat: 'size', text: 'y'.repeat(15 * 1024) });
    expect(fits.status).toBe(202);
  });

  it('publishes an accepted message to the session web:<chat> like any channel, and shows it to the chat’s other pages', async () => {
    const other = await openEvents(port, '/chat/events?chat=inbound', cookie());
    const answer = await post({ chat: 'inbound', text: 'hello bus', id: 'm-1' });
    expect(answer.status).toBe(202);
    expect(JSON.parse(answer.body)).toEqual({ id: 'm-1' });
    const [queued] = (await bus.mailbox('web:inbound').read(0)).messages;
    expect(queued).toMatchObject({
      id: 'web:inbound:m-1',
      channel: 'web',
      chatId: 'inbound',
      senderId: 'web',
      content: 'hello bus',
    });
    await other.until((e) => e.some((x) => x.event === 'user'), 'the user event');
    expect(other.events.find((x) => x.event === 'user')?.data).toMatchObject({
      id: 'm-1',
      text: 'hello bus',
    });
    other.close();
  });

  it('answers /stop at once on the page without queueing it for the model', async () => {
    const events = await openEvents(port, '/chat/events?chat=stopper', cookie());
    expect((await post({ chat: 'stopper', text: '/STOP now', id: 's1' })).status).toBe(202);
    await events.until((e) => e.some((x) => x.event === 'message'), 'the stop answer');
    expect(events.events.find((x) => x.event === 'message')?.data).toMatchObject({
      text: 'Nothing to stop.',
    });
    expect(await bus.mailbox('web:stopper').length()).toBe(0);
    events.close();
  });

  it("delivers WebChannel's messages, live snapshots and typing, each kept message with an id", async () => {
    const events = await openEvents(port, '/chat/events?chat=deliver', cookie());
    expect(events.status).toBe(200);
    await events.until((e) => types(e).includes('ready'), 'ready');
    channel.startActivity('deliver');
    await channel.preview({
      turn: 't1',
      channel: 'web',
      chatId: 'deliver',
      text: 'Hel',
      seq: 1,
      metadata: {},
    });
    await channel.send({
      id: 'o1',
      channel: 'web',
      chatId: 'deliver',
      content: 'Hello <b>there</b>',
      kind: 'reply',
      live: 't1',
      createdAt: new Date().toISOString(),
      metadata: {},
    });
    channel.stopActivity('deliver');
    await events.until((e) => e.filter((x) => x.event === 'typing').length === 2, 'typing on and off');
    const received = events.events.filter((e) => e.event !== 'ready');
    expect(types(received)).toEqual(['typing', 'live', 'message', 'typing']);
    expect(received[1]).toMatchObject({ data: { turn: 't1', text: 'Hel' } });
    expect(received[1]?.id).toBeUndefined();
    expect(received[2]).toMatchObject({
      id: expect.stringMatching(/^\d+-\d+$/),
      data: { id: 'o1', text: 'Hello <b>there</b>', live: 't1', kind: 'reply' },
    });
    events.close();
  });

  it('resumes after Last-Event-ID with only what was missed, including what came while no page was open', async () => {
    const send = (id: string) =>
      channel.send({
        id,
        channel: 'web',
        chatId: 'resume',
        content: `text ${id}`,
        kind: 'reply',
        createdAt: new Date().toISOString(),
        metadata: {},
      });
    const first = await openEvents(port, '/chat/events?chat=resume', cookie());
    await send('r1');
    await send('r2');
    await first.until((e) => e.filter((x) => x.event === 'message').length === 2, 'two messages');
    const lastId = first.lastId as string;
    first.close();
    await send('r3'); // nobody is listening now
    const again = await openEvents(port, '/chat/events?chat=resume', {
      ...cookie(),
      'last-event-id': lastId,
    });
    await again.until((e) => types(e).includes('ready'), 'ready');
    await send('r4');
    await again.until((e) => e.filter((x) => x.event === 'message').length === 2, 'r3 and r4');
    expect(
      again.events.filter((x) => x.event === 'message').map((x) => (x.data as { id: string }).id),
    ).toEqual(['r3', 'r4']);
    again.close();
    // `?after=` does the same for a page's first connection; a bad id is refused.
    const after = await openEvents(port, `/chat/events?chat=resume&after=${lastId}`, cookie());
    await after.until((e) => types(e).includes('ready'), 'ready');
    expect(after.events.filter((x) => x.event === 'message')).toHaveLength(2);
    after.close();
    for (const bad of ['0', 'abc-1', '1-2-3', `${'9'.repeat(30)}-1`]) {
      const refused = await openEvents(port, '/chat/events?chat=resume', {
        ...cookie(),
        'last-event-id': bad,
      });
      expect(refused.status, bad).toBe(400);
      refused.close();
    }
  });

  it('delivers at the next heartbeat a kept message whose publish the stream missed, once', async () => {
    const events = await openEvents(port, '/chat/events?chat=lost', cookie());
    await events.until((e) => types(e).includes('ready'), 'ready');
    // Kept but never published, as when the dashboard's subscriber was reconnecting.
    const event = { type: 'message', id: 'lost-1', text: 'kept only', kind: 'reply', at: '' };
    const id = await bus.redis.xadd(`${bus.prefix}:web-events:lost`, '*', 'event', JSON.stringify(event));
    await events.until((e) => e.some((x) => x.event === 'message'), 'the kept message');
    expect(events.events.find((x) => x.event === 'message')).toMatchObject({
      id,
      data: { text: 'kept only' },
    });
    // Later heartbeats read the stream again but do not send it twice.
    const beats = events.comments;
    await events.until(() => events.comments >= beats + 3, 'three more heartbeats');
    expect(events.events.filter((x) => x.event === 'message')).toHaveLength(1);
    events.close();
  });

  it('sends heartbeat comments on an idle stream and refuses a bad chat id', async () => {
    const idle = await openEvents(port, '/chat/events?chat=idle', cookie());
    await idle.until(() => idle.comments >= 2, 'two heartbeats');
    idle.close();
    const bad = await openEvents(port, '/chat/events?chat=a%2Fb', cookie());
    expect(bad.status).toBe(400);
    bad.close();
  });

  it('returns the session’s user and assistant texts and the reminders no session holds, the newest kept event as cursor', async () => {
    await sessions.append(
      'web:hist',
      { role: 'user', content: 'what is 2+2?' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'calc', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'c1', content: '4' },
      { role: 'assistant', content: '**4**' },
    );
    const empty = await webRequest(port, 'GET', '/chat/history?chat=hist', { headers: cookie() });
    expect(JSON.parse(empty.body)).toMatchObject({
      cursor: null,
      messages: [
        { role: 'user', text: 'what is 2+2?' },
        { role: 'assistant', text: '**4**' },
      ],
    });
    expect(JSON.parse(empty.body).messages).toHaveLength(2);
    const id = await bus.pushWebEvent('hist', {
      type: 'message',
      id: 'h1',
      text: '4',
      kind: 'reply',
      at: '',
    });
    const withCursor = await webRequest(port, 'GET', '/chat/history?chat=hist', { headers: cookie() });
    expect(JSON.parse(withCursor.body).cursor).toBe(id);
    // The reply is the session's; a reminder (no session holds it) comes from the kept messages.
    expect(JSON.parse(withCursor.body).messages).toHaveLength(2);
    await channel.send({
      id: 'reminder-1',
      channel: 'web',
      chatId: 'hist',
      content: '⏰ stretch',
      kind: 'message',
      createdAt: new Date().toISOString(),
      metadata: {},
    });
    const withReminder = await webRequest(port, 'GET', '/chat/history?chat=hist', { headers: cookie() });
    expect(JSON.parse(withReminder.body).messages.map((m: { text: string }) => m.text)).toEqual([
      'what is 2+2?',
      '**4**',
      '⏰ stretch',
    ]);
    const bad = await webRequest(port, 'GET', '/chat/history?chat=..', { headers: cookie() });
    expect(bad.status).toBe(400);
  });

  it('a dashboard without the chat (the standalone magpie dashboard) says where the chat is', async () => {
    const standalone = await dashboardOn(bus);
    try {
      const answer = await webRequest(standalone.port, 'GET', '/chat', {
        headers: { cookie: signedInCookie(standalone.port, TOKEN) },
      });
      expect(answer.status).toBe(404);
      expect(answer.body).toContain('inside magpie start / magpie gateway');
    } finally {
      await standalone.close();
    }
  });

  it('refuses to deliver to a chat id no page can have (permanent), and keeps at most the cap', async () => {
    const refused = await channel
      .send({
        id: 'x',
        channel: 'web',
        chatId: 'a:b',
        content: 'x',
        kind: 'reply',
        createdAt: '',
        metadata: {},
      })
      .catch((err: unknown) => err);
    expect(hasCode(refused, 'DELIVERY_PERMANENT')).toBe(true);
    for (let i = 0; i < 210; i++)
      await bus.pushWebEvent('cap', { type: 'message', id: `c${i}`, text: '', kind: 'reply', at: '' });
    const kept = await bus.readWebEvents('cap', undefined, 1000);
    expect(kept).toHaveLength(200);
    expect(kept[0]?.event).toMatchObject({ id: 'c10' });
    expect(await bus.redis.ttl(`${bus.prefix}:web-events:cap`)).toBeGreaterThan(3600);
  });
});
