/**
 * A CLI reply watcher (bus/reply-lists.ts) whose catch-up read fails keeps
 * trying: on a Redis Cluster the subscriber can stay ready while the read is
 * refused mid-failover, and no later 'ready' comes to catch up again. Here, on
 * a redis-server of its own, the reader's user is denied LRANGE by ACL while the
 * subscriber reconnects (CLIENT KILL): the reply kept in the list, and never
 * heard published, still reaches the handler once LRANGE is allowed again.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { keys } from '../../../src/bus/keys.js';
import { ReplyWatcher } from '../../../src/bus/reply-lists.js';
import { capturingLogger } from '../../fakes/logger.js';
import { type RedisHandle, startRedis } from '../../fakes/redis-server.js';
import { waitFor } from '../../fakes/wait-for.js';

describe('CLI reply watcher catch-up', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function ownRedis(): Promise<{ server: RedisHandle; admin: Redis }> {
    const server = await startRedis();
    cleanups.push(() => server.stop());
    const admin = new Redis({ port: server.port, host: '127.0.0.1' });
    cleanups.push(() => admin.quit());
    return { server, admin };
  }

  it('retries a failed read of the reply lists until it succeeds, and hands over the reply it missed', async () => {
    const { server, admin } = await ownRedis();
    await admin.acl('SETUSER', 'reader', 'on', '>reader-pw', '~*', '&*', '+@all');
    const { logger, lines } = capturingLogger();
    const prefix = `magpie-${randomUUID()}`;
    const watcher = new ReplyWatcher({
      subscriber: new Redis({ port: server.port, host: '127.0.0.1', maxRetriesPerRequest: null }),
      reader: new Redis({
        port: server.port,
        host: '127.0.0.1',
        username: 'reader',
        password: 'reader-pw',
        maxRetriesPerRequest: null,
      }),
      prefix,
      logger,
    });
    cleanups.push(() => watcher.close());
    const heard: string[] = [];
    const address = randomUUID();
    await watcher.watch(address, (payload) => heard.push(payload));

    // LRANGE refused before the reply is there, so that no read of the lists can take it yet
    // (the watcher's first catch-up, after its subscriber's first 'ready', may still be reading).
    await admin.acl('SETUSER', 'reader', '-lrange');
    // A reply the subscriber never hears published: only the list has it.
    const reply = JSON.stringify({ id: 'r-1', kind: 'reply', content: 'hello' });
    await admin.rpush(keys.cliReplies(prefix, address), reply);
    await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    const failed = (n: number) =>
      lines.filter((l) => l.msg.startsWith('reading CLI reply lists after a reconnect failed')).length >= n;
    await waitFor(() => failed(1), 10_000, 'the catch-up read refused');
    expect(heard).toEqual([]);

    await admin.acl('SETUSER', 'reader', '+lrange');
    await waitFor(() => heard.length > 0, 10_000, 'the missed reply read on a retry');
    // Two catch-ups may both read it (the first 'ready' and the kill's): callers take a reply once by its id.
    expect(new Set(heard)).toEqual(new Set([reply]));
    expect(lines.some((l) => l.msg === 'CLI reply lists read after a reconnect, after retries')).toBe(true);
  });
});
