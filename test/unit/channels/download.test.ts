/**
 * downloadCapped against a real HTTP server on 127.0.0.1: the bytes under the
 * cap; an over-declared length refused before the body; an endless body with
 * no length stopped as soon as the cap passes (the bypass of a Content-Length
 * check); HTTP errors as results; abort and time limit as rejections.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downloadCapped, downloadFailureNote, tooLargeNote } from '../../../src/channels/download.js';

let server: Server;
let base = '';
/** Bytes the endless route wrote before its client went away. */
let endlessWritten = 0;
let endlessClosed: Promise<void> = Promise.resolve();

function route(req: IncomingMessage, res: ServerResponse): void {
  switch (req.url) {
    case '/small':
      res.end(Buffer.alloc(1000, 7));
      return;
    case '/declared-large':
      res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) });
      res.write(Buffer.alloc(1024)); // and then never finishes
      return;
    case '/endless': {
      endlessWritten = 0;
      let closed: () => void = () => {};
      endlessClosed = new Promise((resolve) => {
        closed = resolve;
      });
      res.writeHead(200, { 'content-type': 'application/octet-stream' }); // chunked, no length
      const chunk = Buffer.alloc(16 * 1024, 1);
      const pump = () => {
        while (!res.destroyed && endlessWritten < 64 * 1024 * 1024) {
          endlessWritten += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
      };
      res.once('close', () => closed());
      pump();
      return;
    }
    case '/missing':
      res.writeHead(404).end('no');
      return;
    default:
      res.writeHead(200); // headers, then silence
      res.flushHeaders();
  }
}

beforeAll(async () => {
  server = createServer(route);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  server.close();
});

describe('downloadCapped', () => {
  it('returns the whole body under the cap', async () => {
    const got = await downloadCapped(`${base}/small`, { maxBytes: 1000 });
    expect(got).toEqual({ ok: true, bytes: Buffer.alloc(1000, 7) });
  });

  it('refuses a declared length over the cap without reading the body', async () => {
    const got = await downloadCapped(`${base}/declared-large`, { maxBytes: 1024 * 1024, timeoutMs: 5000 });
    expect(got).toEqual({ ok: false, reason: 'too-large', size: 10 * 1024 * 1024 });
  });

  it('stops an endless body without a length as soon as it passes the cap', async () => {
    const maxBytes = 256 * 1024;
    const got = await downloadCapped(`${base}/endless`, { maxBytes, timeoutMs: 10_000 });
    expect(got).toMatchObject({ ok: false, reason: 'too-large' });
    const { size } = got as { size: number };
    expect(size).toBeGreaterThan(maxBytes);
    expect(size).toBeLessThan(maxBytes + 128 * 1024);
    await endlessClosed; // the connection was dropped, not read to the end
    expect(endlessWritten).toBeLessThan(64 * 1024 * 1024);
  });

  it('answers an HTTP error with its status', async () => {
    const got = await downloadCapped(`${base}/missing`, { maxBytes: 1000 });
    expect(got).toEqual({ ok: false, reason: 'http', status: 404 });
    if (got.ok) return;
    expect(downloadFailureNote(got, 1000)).toBe('could not be downloaded (HTTP 404)');
  });

  it('rejects when aborted and when the time limit passes', async () => {
    const controller = new AbortController();
    const aborted = downloadCapped(`${base}/silent`, { maxBytes: 1000, signal: controller.signal });
    controller.abort();
    await expect(aborted).rejects.toThrow();
    await expect(downloadCapped(`${base}/silent`, { maxBytes: 1000, timeoutMs: 50 })).rejects.toThrow();
  });
});

describe('tooLargeNote', () => {
  it('names the size and the limit in MB', () => {
    expect(tooLargeNote(3 * 1024 * 1024, 1024 * 1024)).toBe(
      'too large (3.0 MB; the limit is 1.0 MB), not downloaded',
    );
  });
});
