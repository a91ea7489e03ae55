/**
 * The test Redis server's kill(): the dead server's port stays taken, so another test file's
 * server cannot start at a killed master's address while the Sentinels elect (that made one
 * failover test's chat wait past its 20 s), and a client meets a dead server there.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { type RedisHandle, startRedis } from '../../fakes/redis-server.js';

const started: RedisHandle[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((server) => server.stop()));
});

describe('a killed test Redis server', () => {
  it('keeps its port: another server cannot start there, and a client is turned away', async () => {
    const server = await startRedis();
    started.push(server);
    await server.kill();
    expect(server.process.signalCode).toBe('SIGKILL');

    await expect(startRedis({ port: server.port, dir: server.dir })).rejects.toThrow(
      /exited|Address already in use/,
    );
    const client = new Redis(server.port, '127.0.0.1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => undefined);
    await expect(client.connect().then(() => client.ping())).rejects.toThrow();
    client.disconnect();
  });

  it('gives the port back for a restart on it', async () => {
    const server = await startRedis();
    started.push(server);
    await server.kill();
    await server.releasePort();

    const again = await startRedis({ port: server.port, dir: server.dir });
    started.push(again);
    const client = new Redis(again.port, '127.0.0.1');
    expect(await client.ping()).toBe('PONG');
    client.disconnect();
  });
});
