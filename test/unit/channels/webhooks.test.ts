/** The gateway's webhook listener (channels/webhooks.ts): routes, the body cap, errors, closing. */
import { afterEach, describe, expect, it } from 'vitest';
import { WebhookListener, type WebhookRequest } from '../../../src/channels/webhooks.js';
import { silentLogger } from '../../../src/log/index.js';
import { closedPort } from '../../fakes/net.js';

let listener: WebhookListener | undefined;
afterEach(async () => {
  await listener?.close();
  listener = undefined;
});

describe('WebhookListener', () => {
  it('does not listen without a port or without a route', async () => {
    expect(await new WebhookListener({ port: undefined, logger: silentLogger() }).listen()).toBeUndefined();
    listener = new WebhookListener({ port: await closedPort(), logger: silentLogger() });
    expect(await listener.listen()).toBeUndefined();
  });

  it('serves mounted paths with the raw body, 404 elsewhere, 413 past the cap, 500 when a handler throws', async () => {
    listener = new WebhookListener({ port: await closedPort(), logger: silentLogger() });
    const seen: WebhookRequest[] = [];
    listener.mount(
      '/webhooks/echo',
      async (request) => {
        seen.push(request);
        return { status: 200, body: `${request.method} ${request.body.toString('hex')}` };
      },
      { maxBodyBytes: 8 },
    );
    const unmount = listener.mount('/webhooks/broken', async () => {
      throw new Error('boom');
    });
    expect(() => listener!.mount('/webhooks/echo', async () => ({ status: 200 }))).toThrow(/already mounted/);
    const url = await listener.listen();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const post = await fetch(`${url}/webhooks/echo?x=1`, { method: 'POST', body: Buffer.from([0, 1, 255]) });
    expect([post.status, await post.text()]).toEqual([200, 'POST 0001ff']);
    expect(seen[0]!.url.searchParams.get('x')).toBe('1');
    expect(post.headers.get('cache-control')).toBe('no-store');
    expect((await fetch(`${url}/webhooks/echo`, { method: 'POST', body: '123456789' })).status).toBe(413);
    expect(seen).toHaveLength(1);
    expect((await fetch(`${url}/webhooks/other`)).status).toBe(404);
    expect((await fetch(`${url}/`)).status).toBe(404);
    expect((await fetch(`${url}/webhooks/broken`, { method: 'POST' })).status).toBe(500);
    unmount();
    expect((await fetch(`${url}/webhooks/broken`, { method: 'POST' })).status).toBe(404);
  });

  it('refuses a port already taken with one ConfigError', async () => {
    listener = new WebhookListener({ port: await closedPort(), logger: silentLogger() });
    listener.mount('/a', async () => ({ status: 200 }));
    await listener.listen();
    const second = new WebhookListener({ port: listener.port, logger: silentLogger() });
    second.mount('/a', async () => ({ status: 200 }));
    await expect(second.listen()).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });

  it('lets a request in flight finish when closing, and takes no new one', async () => {
    listener = new WebhookListener({ port: await closedPort(), logger: silentLogger() });
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let arrived!: () => void;
    const inside = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    listener.mount('/slow', async () => {
      arrived();
      await held;
      return { status: 200, body: 'done' };
    });
    const url = await listener.listen();
    const slow = fetch(`${url}/slow`, { method: 'POST' });
    await inside;
    const closing = listener.close();
    await expect(fetch(`${url}/slow`, { method: 'POST' })).rejects.toThrow();
    release();
    const res = await slow;
    expect([res.status, await res.text()]).toEqual([200, 'done']);
    await closing;
  });
});
