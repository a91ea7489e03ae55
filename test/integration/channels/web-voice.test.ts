/**
 * The web chat's voice routes on the real dashboard server and real Redis:
 * both need the token; a recording must be same-origin (the message rule),
 * typed audio/webm or audio/ogg and really be WebM or OGG (a lying type is
 * refused), at most 2 MB and (OGG) at most the length cap, each refusal one
 * line; an accepted one reaches the session's mailbox as an audio attachment
 * holding the same bytes, and the chat's other tabs see a voice-note bubble.
 * WebChannel keeps a spoken reply apart from the event stream (its event
 * carries only the length) and `GET /chat/audio` serves the same OGG bytes
 * (a byte range as 206, one outside them 416);
 * a chat keeps its last 10 clips; audio that is not OGG/Opus is refused.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Router } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bus } from '../../../src/bus/bus.js';
import { WEB_AUDIO_MAX } from '../../../src/bus/web-audio.js';
import { createWebChatRouter } from '../../../src/channels/web/routes.js';
import { VOICE_NOTE_TEXT } from '../../../src/channels/web/voice-routes.js';
import { WebChannel } from '../../../src/channels/web/web-channel.js';
import { hasCode } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import type { OutboundMessage } from '../../../src/messages/messages.js';
import { type Dashboard, startDashboard } from '../../../src/ops/dashboard-server.js';
import { JsonlSessionStore } from '../../../src/sessions/jsonl-store.js';
import { opusAudio } from '../../fakes/opus-audio.js';
import { pageHeaders, signedInCookie, webRequest } from '../../fakes/web-client.js';
import { testConfig } from '../bus/helpers.js';

const TOKEN = 'web-voice-test-token';
const logger = silentLogger();

describe('web chat voice routes', () => {
  let bus: Bus;
  let dashboard: Dashboard;
  let short: Dashboard;
  let channel: WebChannel;
  let workspace: string;
  let port: number;
  let ogg: Buffer;

  const dashboardOn = (chat: Router) =>
    startDashboard({
      reader: bus.opsReader,
      url: bus.url,
      prefix: bus.prefix,
      workspace,
      logger,
      token: TOKEN,
      chat,
    });

  beforeAll(async () => {
    bus = await Bus.connect({ config: testConfig(), logger });
    workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-web-voice-'));
    const sessions = new JsonlSessionStore({ dir: path.join(workspace, 'sessions'), logger });
    dashboard = await dashboardOn(createWebChatRouter({ bus, sessions, logger }));
    short = await dashboardOn(createWebChatRouter({ bus, sessions, logger, maxVoiceSeconds: 1 }));
    port = dashboard.port;
    channel = new WebChannel({ bus, logger });
    ogg = opusAudio();
  });

  afterAll(async () => {
    await dashboard?.close();
    await short?.close();
    await bus?.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  const postVoice = (
    route: string,
    body: Buffer | string,
    headers: Record<string, string> = { ...pageHeaders(port, TOKEN), 'content-type': 'audio/ogg' },
    on = port,
  ) => webRequest(on, 'POST', route, { headers, body });

  const spoken = (id: string, chatId: string, bytes: Buffer): OutboundMessage => ({
    id,
    channel: 'web',
    chatId,
    content: '',
    kind: 'reply',
    media: [
      { kind: 'audio', mimeType: 'audio/ogg', dataUrl: `data:audio/ogg;base64,${bytes.toString('base64')}` },
    ],
    createdAt: new Date().toISOString(),
    metadata: {},
  });

  const audioOf = async (chat: string, id: string) => {
    const res = await fetch(`http://127.0.0.1:${port}/chat/audio?chat=${chat}&id=${id}`, {
      headers: { cookie: signedInCookie(port, TOKEN) },
    });
    return {
      status: res.status,
      type: res.headers.get('content-type'),
      bytes: Buffer.from(await res.arrayBuffer()),
    };
  };

  it('answers 401 to both routes without the token', async () => {
    const posted = await postVoice('/chat/voice?chat=a', ogg, {
      'content-type': 'audio/ogg',
      origin: `http://127.0.0.1:${port}`,
    });
    expect(posted.status).toBe(401);
    const got = await webRequest(port, 'GET', '/chat/audio?chat=a&id=x');
    expect(got.status).toBe(401);
    expect(await bus.mailbox('web:a').length()).toBe(0);
  });

  it('hands an OGG recording to the session as an audio attachment with the same bytes, and shows it in other tabs', async () => {
    const answer = await postVoice('/chat/voice?chat=talk&id=v1', ogg);
    expect(answer.status).toBe(202);
    expect(JSON.parse(answer.body)).toEqual({ id: 'v1' });
    const { messages } = await bus.mailbox('web:talk').read(0);
    expect(messages).toHaveLength(1);
    const [media] = messages[0]?.media ?? [];
    expect(media?.kind).toBe('audio');
    expect(media?.mimeType).toBe('audio/ogg');
    expect(media?.size).toBe(ogg.length);
    expect(Buffer.from(media?.dataUrl?.split(',')[1] ?? '', 'base64').equals(ogg)).toBe(true);
    const kept = await bus.readWebEvents('talk', undefined);
    expect(kept.map((k) => k.event)).toMatchObject([{ type: 'user', id: 'v1', text: VOICE_NOTE_TEXT }]);
  });

  it('takes WebM by its EBML header as audio/webm', async () => {
    const webm = Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3]), Buffer.alloc(64, 1)]);
    const answer = await postVoice('/chat/voice?chat=webm', webm, {
      ...pageHeaders(port, TOKEN),
      'content-type': 'audio/webm;codecs=opus',
    });
    expect(answer.status).toBe(202);
    const { messages } = await bus.mailbox('web:webm').read(0);
    expect(messages[0]?.media[0]).toMatchObject({
      kind: 'audio',
      mimeType: 'audio/webm',
      name: 'voice.webm',
    });
  });

  it('refuses a recording over 2 MB with 413 and one line, and an OGG over the length cap', async () => {
    const big = Buffer.concat([ogg, Buffer.alloc(2 * 1024 * 1024)]);
    const tooBig = await postVoice('/chat/voice?chat=cap', big);
    expect(tooBig.status).toBe(413);
    expect(tooBig.body).toBe('magpie chat: the recording is too large (at most 2048 KB)');
    const long = await postVoice(
      '/chat/voice?chat=cap',
      ogg,
      { ...pageHeaders(short.port, TOKEN), 'content-type': 'audio/ogg' },
      short.port,
    );
    expect(long.status).toBe(413);
    expect(long.body).toBe('magpie chat: the recording is too long (at most 1 s)');
    expect(await bus.mailbox('web:cap').length()).toBe(0);
  });

  it('refuses a wrong type, a type that lies about the bytes, bad ids, and cross-site posts', async () => {
    const base = pageHeaders(port, TOKEN);
    const cases: Array<[string, string, Buffer | string, Record<string, string>, number]> = [
      ['text/plain', '/chat/voice?chat=bad', ogg, { ...base, 'content-type': 'text/plain' }, 415],
      [
        'form',
        '/chat/voice?chat=bad',
        ogg,
        { ...base, 'content-type': 'multipart/form-data; boundary=x' },
        415,
      ],
      ['json', '/chat/voice?chat=bad', ogg, base, 415],
      [
        'lying type',
        '/chat/voice?chat=bad',
        '<script>alert(1)</script>',
        { ...base, 'content-type': 'audio/ogg' },
        415,
      ],
      ['empty', '/chat/voice?chat=bad', '', { ...base, 'content-type': 'audio/ogg' }, 415],
      ['bad chat', '/chat/voice?chat=../x', ogg, { ...base, 'content-type': 'audio/ogg' }, 400],
      ['bad id', '/chat/voice?chat=bad&id=a%20b', ogg, { ...base, 'content-type': 'audio/ogg' }, 400],
      [
        'other origin',
        '/chat/voice?chat=bad',
        ogg,
        {
          ...base,
          'content-type': 'audio/ogg',
          origin: 'http://evil.example',
          'sec-fetch-site': 'cross-site',
        },
        403,
      ],
      [
        'cookie only',
        '/chat/voice?chat=bad',
        ogg,
        { cookie: signedInCookie(port, TOKEN), 'content-type': 'audio/ogg' },
        403,
      ],
    ];
    for (const [name, route, body, headers, status] of cases) {
      const answer = await postVoice(route, body, headers);
      expect(answer.status, name).toBe(status);
      expect(answer.body.trim().split('\n'), name).toHaveLength(1);
    }
    expect(await bus.mailbox('web:bad').length()).toBe(0);
  });

  it('keeps a spoken reply apart from the event stream and serves its OGG bytes at /chat/audio, by range too', async () => {
    await channel.send(spoken('r-t1-voice', 'hear', ogg));
    const kept = await bus.readWebEvents('hear', undefined);
    expect(kept).toHaveLength(1);
    const event = kept[0]?.event;
    expect(event).toMatchObject({ type: 'message', id: 'r-t1-voice', text: '' });
    expect(event?.type === 'message' && event.audio?.seconds).toBeGreaterThan(1);
    expect(JSON.stringify(event).length).toBeLessThan(300);
    const audio = await audioOf('hear', 'r-t1-voice');
    expect(audio.status).toBe(200);
    expect(audio.type).toBe('audio/ogg');
    expect(audio.bytes.equals(ogg)).toBe(true);
    const tail = await fetch(`http://127.0.0.1:${port}/chat/audio?chat=hear&id=r-t1-voice`, {
      headers: { cookie: signedInCookie(port, TOKEN), range: 'bytes=-100' },
    });
    expect(tail.status).toBe(206);
    expect(tail.headers.get('content-range')).toBe(
      `bytes ${ogg.length - 100}-${ogg.length - 1}/${ogg.length}`,
    );
    expect(Buffer.from(await tail.arrayBuffer()).equals(ogg.subarray(-100))).toBe(true);
    const outside = await fetch(`http://127.0.0.1:${port}/chat/audio?chat=hear&id=r-t1-voice`, {
      headers: { cookie: signedInCookie(port, TOKEN), range: `bytes=${ogg.length + 10}-` },
    });
    expect(outside.status).toBe(416);
    expect((await audioOf('hear', 'nope')).status).toBe(404);
    expect((await audioOf('other', 'r-t1-voice')).status).toBe(404);
  });

  it(`keeps a chat's last ${WEB_AUDIO_MAX} clips, and refuses audio that is not OGG/Opus`, async () => {
    for (let i = 0; i <= WEB_AUDIO_MAX; i++) await channel.send(spoken(`r-c${i}-voice`, 'many', ogg));
    expect((await audioOf('many', 'r-c0-voice')).status).toBe(404);
    expect((await audioOf('many', 'r-c1-voice')).status).toBe(200);
    expect((await audioOf('many', `r-c${WEB_AUDIO_MAX}-voice`)).status).toBe(200);
    const bad = await channel
      .send(spoken('r-bad-voice', 'many', Buffer.from('not audio')))
      .catch((e: unknown) => e);
    expect(hasCode(bad, 'INVALID_MESSAGE')).toBe(true);
    expect((await audioOf('many', 'r-bad-voice')).status).toBe(404);
  });
});
