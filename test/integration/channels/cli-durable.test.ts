/**
 * Durable CLI replies (bus/reply-lists.ts, CliChannel.send, sendAndWait) on a
 * real redis-server of their own: clients waiting while Redis is SIGKILLed
 * and restarted all get their replies once; a reply published while a
 * client's subscriber is away is read from the reply list; a message heard
 * by pub/sub and read again from the list is shown once.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TurnOptions } from '../../../src/agent/types.js';
import type { Bus } from '../../../src/bus/bus.js';
import { keys } from '../../../src/bus/keys.js';
import { CliChannel } from '../../../src/channels/cli/cli-channel.js';
import { sendAndWait } from '../../../src/channels/cli/client.js';
import { describeError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { type InboundMessage, type OutboundMessage, sessionKeyOf } from '../../../src/messages/messages.js';
import { messageId, turnId } from '../../../src/messages/outbound-ids.js';
import { type RedisHandle, startRedis } from '../../fakes/redis-server.js';
import { waitFor } from '../../fakes/wait-for.js';
import {
  cliReplyAddress as addressOf,
  busConnector,
  cleanupsAfterEach,
  finishedTurn,
  MessageOnlyAgent,
  startCliStack,
  testConfig,
} from '../bus/helpers.js';

const logger = silentLogger();

/**
 * A fake agent: each turn first sends a mid-turn note (the message tool's
 * path), then answers with the question after `turnMs(question)`. Counts
 * turns started and finished.
 */
class NotingAgent extends MessageOnlyAgent {
  started = 0;
  finished = 0;
  constructor(private readonly turnMs: (content: string) => number) {
    super();
  }

  async processMessage(messages: InboundMessage | InboundMessage[], options: TurnOptions = {}) {
    const batch = Array.isArray(messages) ? messages : [messages];
    const head = batch[0]!;
    this.started += 1;
    await options.outbound?.publish({
      id: messageId(turnId(sessionKeyOf(head), head.id), 1), // as the message tool names it
      channel: head.channel,
      chatId: head.chatId,
      content: `note for ${head.content}`,
      kind: 'message',
    });
    await new Promise((resolve) => setTimeout(resolve, this.turnMs(head.content)));
    this.finished += 1;
    return finishedTurn(head, `answer to ${batch.map((m) => m.content).join('+')}`);
  }
}

describe('durable CLI replies', () => {
  const cleanups = cleanupsAfterEach();

  /** A redis-server with AOF in a folder of its own (so it can be restarted with its data). */
  async function ownRedis(): Promise<{ redis: RedisHandle; dir: string }> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-cli-durable-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const redis = await startRedis({ dir });
    return { redis, dir };
  }

  const connect = busConnector(cleanups, { turnJobs: { backoffMs: 50 } });

  /**
   * On a Redis of its own: a client asking "hello" in `chatId` (the messages it hears kept in
   * `notes`, its answer in `waiting`), the gateway's bus and the request's reply address.
   */
  async function helloWaiting(chatId: string) {
    const { redis } = await ownRedis();
    cleanups.push(() => redis.stop());
    const config = testConfig(redis.url);
    const client = await connect(config);
    const gateway = await connect(config);
    const notes: string[] = [];
    const waiting = sendAndWait(client, {
      content: 'hello',
      chatId,
      timeoutMs: 20_000,
      onMessage: (m) => notes.push(m.content),
    });
    const address = await addressOf(gateway, chatId);
    return { config, gateway, notes, waiting, address };
  }

  function outbound(
    chatId: string,
    address: string,
    content: string,
    kind: 'message' | 'reply',
  ): OutboundMessage {
    return {
      id: `o-${randomUUID()}`,
      channel: 'cli',
      chatId,
      content,
      kind,
      createdAt: new Date().toISOString(),
      metadata: { replyAddresses: [address] },
    };
  }

  it('ten sendAndWait clients waiting while Redis is SIGKILLed and restarted all get their replies, once each', async () => {
    const { redis: first, dir } = await ownRedis();
    let redis = first;
    cleanups.push(() => redis.stop());
    const config = testConfig(redis.url);
    // Long enough that no turn ends before every client heard its note, even on a loaded machine.
    const agent = new NotingAgent((content) => 2_000 + Number(content.slice(1)) * 100);
    await startCliStack(connect, config, cleanups, { agent, concurrency: 10 });

    const clients = await Promise.all(Array.from({ length: 10 }, () => connect(config)));
    const notes = clients.map(() => [] as string[]);
    const waits = Promise.allSettled(
      clients.map((bus, i) =>
        sendAndWait(bus, {
          content: `q${i}`,
          chatId: `d${i}`,
          timeoutMs: 30_000,
          onMessage: (m) => notes[i]!.push(m.content),
        }),
      ),
    );
    // Every question reached the model and every client heard its turn's note; Redis dies with
    // the turns in flight and stays down until every turn is over, so every reply is published
    // after the restart, while the clients' subscribers are still finding their way back (and
    // read their lists again, notes included).
    await waitFor(() => notes.every((n) => n.length === 1), 15_000, 'every note heard');
    expect(agent.started).toBe(10);
    expect(agent.finished).toBe(0);
    await redis.kill(); // its port held until the restart, so no other test's server takes it
    await waitFor(() => agent.finished === 10, 15_000, 'all ten turns finished');
    await redis.releasePort();
    redis = await startRedis({ dir, port: redis.port });

    const replies = await waits;
    for (let i = 0; i < 10; i++) {
      const settled = replies[i]!;
      const reply = settled.status === 'fulfilled' ? settled.value : describeError(settled.reason);
      expect(reply).toMatchObject({ content: `answer to q${i}`, chatId: `d${i}`, kind: 'reply' });
      expect(notes[i]).toEqual([`note for q${i}`]);
    }
  }, 60_000);

  it('a reply published while the client subscriber is away is read from the reply list', async () => {
    const { config, gateway, notes, waiting, address } = await helloWaiting('p1');
    const channel = `${config.redis.prefix}:cli:${address}`;
    await waitFor(
      async () => ((await gateway.redis.pubsub('NUMSUB', channel)) as [string, number])[1] === 1,
      5_000,
      'the client listening',
    );

    // Pipelined: Redis drops the subscriber, then takes both messages before it can reconnect.
    const kill = gateway.redis.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    const note = outbound('p1', address, 'a note', 'message');
    const reply = outbound('p1', address, 'the reply', 'reply');
    const heard = await Promise.all([
      gateway.pushCliReply(address, JSON.stringify(note)),
      gateway.pushCliReply(address, JSON.stringify(reply)),
    ]);
    expect(Number(await kill)).toBeGreaterThanOrEqual(1);
    expect(heard).toEqual([0, 0]); // pub/sub reached nobody: only the list has them

    const got = await waiting;
    expect(got.id).toBe(reply.id);
    expect(got.content).toBe('the reply');
    expect(notes).toEqual(['a note']);
    // The list expires (about ten minutes) and the client stops listening once answered.
    const ttl = await gateway.redis.ttl(keys.cliReplies(config.redis.prefix, address));
    expect(ttl).toBeGreaterThan(500);
    expect(ttl).toBeLessThanOrEqual(600);
    await waitFor(
      async () => ((await gateway.redis.pubsub('NUMSUB', channel)) as [string, number])[1] === 0,
      5_000,
      'the client no longer listening',
    );
  });

  it('a message heard by pub/sub and read again from the list after a reconnect is shown once', async () => {
    const { gateway, notes, waiting, address } = await helloWaiting('p2');
    const cli = new CliChannel({ bus: gateway, logger });
    await cli.send(outbound('p2', address, 'first note', 'message'));
    await waitFor(() => notes.length === 1, 5_000, 'the note heard');

    // The subscriber drops and comes back: it re-reads the list, which holds the note again.
    const readsBefore = await listReads(gateway);
    await gateway.redis.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await waitFor(async () => (await listReads(gateway)) > readsBefore, 10_000, 'the list read again');
    // Garbage in the list (or on the channel) is skipped, not shown and not fatal.
    await gateway.pushCliReply(address, 'not json');
    await gateway.pushCliReply(address, JSON.stringify({ id: 'x', kind: 'reply' }));
    await cli.send(outbound('p2', address, 'second note', 'message'));
    await cli.send(outbound('p2', address, 'done', 'reply'));

    expect((await waiting).content).toBe('done');
    expect(notes).toEqual(['first note', 'second note']);
  });
});

/** How many LRANGE calls Redis has served so far (INFO commandstats). */
async function listReads(bus: Bus): Promise<number> {
  const stats = await bus.redis.info('commandstats');
  return Number(/cmdstat_lrange:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}
