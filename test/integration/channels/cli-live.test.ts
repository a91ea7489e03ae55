/**
 * Live CLI replies on real Redis: CliChannel.preview forwards a turn's
 * snapshots to the clients waiting on it (sendAndWait's onLive) before the
 * reply; other requests hear nothing; a malformed snapshot is skipped;
 * nothing after the reply; a preview that cannot be sent never throws. And
 * through the real worker and delivery: a model that writes slowly shows text
 * before the turn ends.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { TurnOptions } from '../../../src/agent/types.js';
import type { Bus } from '../../../src/bus/bus.js';
import { CliChannel, cliLiveChannel } from '../../../src/channels/cli/cli-channel.js';
import { sendAndWait } from '../../../src/channels/cli/client.js';
import { silentLogger } from '../../../src/log/index.js';
import type { LiveUpdate } from '../../../src/messages/live-update.js';
import type { InboundMessage, OutboundMessage } from '../../../src/messages/messages.js';
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

/** A model that writes its answer in `pieces`, one every `pieceMs`, through the turn's onDelta. */
class SlowWriter extends MessageOnlyAgent {
  /** Pieces written so far (the answer's growth, as the worker saw it). */
  written = 0;
  constructor(
    private readonly pieces: string[],
    private readonly pieceMs: number,
  ) {
    super();
  }

  async processMessage(messages: InboundMessage | InboundMessage[], options: TurnOptions = {}) {
    const head = (Array.isArray(messages) ? messages : [messages])[0]!;
    options.onIteration?.(1);
    for (const piece of this.pieces) {
      await new Promise((resolve) => setTimeout(resolve, this.pieceMs));
      options.onDelta?.(piece);
      this.written += 1;
    }
    return finishedTurn(head, this.pieces.join(''));
  }
}

describe('live CLI replies', () => {
  const cleanups = cleanupsAfterEach();

  const connectTo = busConnector(cleanups);
  const connect = (config = testConfig(), patient = false): Promise<Bus> => connectTo(config, patient);

  function snapshot(address: string, text: string, seq: number, progress?: string): LiveUpdate {
    return {
      turn: 't-1',
      channel: 'cli',
      chatId: 'l1',
      text,
      seq,
      ...(progress ? { progress } : {}),
      metadata: { replyAddresses: [address] },
    };
  }

  function reply(address: string, content: string): OutboundMessage {
    return {
      id: `r-${randomUUID()}`,
      channel: 'cli',
      chatId: 'l1',
      content,
      kind: 'reply',
      live: 't-1',
      createdAt: new Date().toISOString(),
      metadata: { replyAddresses: [address] },
    };
  }

  it('forwards snapshots to the waiting client, in order, before the reply; nothing after it', async () => {
    const config = testConfig();
    const client = await connect(config);
    const gateway = await connect(config);
    const cli = new CliChannel({ bus: gateway, logger });
    const seen: LiveUpdate[] = [];
    const other: LiveUpdate[] = [];
    const waiting = sendAndWait(client, {
      content: 'hi',
      chatId: 'l1',
      timeoutMs: 10_000,
      onLive: (u) => seen.push(u),
    });
    // A second request in another chat must not hear the first one's snapshots.
    const elsewhere = sendAndWait(client, {
      content: 'other',
      chatId: 'l2',
      timeoutMs: 10_000,
      onLive: (u) => other.push(u),
    });
    const address = await addressOf(gateway, 'l1');
    const otherAddress = await addressOf(gateway, 'l2');

    await cli.preview(snapshot(address, 'Hel', 0));
    await cli.preview(snapshot(address, 'Hello', 1));
    await cli.preview(snapshot(address, 'Hello', 2, 'reading notes/a.md'));
    // Not a snapshot: skipped, the next ones still arrive.
    await gateway.publish(cliLiveChannel(address), '{"turn":"t-1","text":5}');
    await cli.preview(snapshot(address, 'Hello, world', 3));
    await waitFor(() => seen.length === 4, 5_000, 'four snapshots heard');
    expect(seen.map((u) => [u.text, u.progress])).toEqual([
      ['Hel', undefined],
      ['Hello', undefined],
      ['Hello', 'reading notes/a.md'],
      ['Hello, world', undefined],
    ]);

    await cli.send(reply(address, 'Hello, world!'));
    expect((await waiting).content).toBe('Hello, world!');
    // After the reply: a late snapshot reaches nobody (the client stopped listening).
    expect(await gateway.publish(cliLiveChannel(address), JSON.stringify(snapshot(address, 'late', 9)))).toBe(
      0,
    );
    expect(seen).toHaveLength(4);

    await cli.send({ ...reply(otherAddress, 'done'), chatId: 'l2' });
    expect((await elsewhere).content).toBe('done');
    expect(other).toEqual([]);
  });

  it('a client without onLive does not listen for snapshots', async () => {
    const config = testConfig();
    const client = await connect(config);
    const gateway = await connect(config);
    const cli = new CliChannel({ bus: gateway, logger });
    const waiting = sendAndWait(client, { content: 'hi', chatId: 'l1', timeoutMs: 10_000 });
    const address = await addressOf(gateway, 'l1');
    expect(await gateway.publish(cliLiveChannel(address), JSON.stringify(snapshot(address, 'x', 0)))).toBe(0);
    await cli.send(reply(address, 'whole'));
    expect((await waiting).content).toBe('whole');
  });

  it('the wait starts again with each snapshot; silence after them is its own timeout', async () => {
    const config = testConfig();
    const client = await connect(config);
    const gateway = await connect(config);
    const cli = new CliChannel({ bus: gateway, logger });
    let heard = 0;
    const waiting = sendAndWait(client, {
      content: 'hi',
      chatId: 'l1',
      timeoutMs: 800,
      onLive: () => {
        heard += 1;
      },
    });
    const address = await addressOf(gateway, 'l1');
    const started = Date.now();
    // Snapshots every 200 ms for 2 s: longer than the timeout, never 800 ms apart.
    for (let seq = 0; Date.now() - started < 2_000; seq++) {
      await cli.preview(snapshot(address, `text ${seq}`, seq));
      await waitFor(() => heard > seq, 2_000, `snapshot ${seq} heard`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await cli.send(reply(address, 'in time'));
    expect((await waiting).content).toBe('in time');

    const stalled = sendAndWait(client, { content: 'again', chatId: 'l3', timeoutMs: 800, onLive: () => {} });
    const second = await addressOf(gateway, 'l3');
    await cli.preview({ ...snapshot(second, 'half an ans', 0), chatId: 'l3' });
    await expect(stalled).rejects.toMatchObject({
      code: 'TIMEOUT',
      message: 'the answer stopped arriving: nothing more for 1s',
    });
  });

  it('preview never throws, even with Redis gone from under it', async () => {
    const gateway = await connect();
    const cli = new CliChannel({ bus: gateway, logger });
    await gateway.close();
    await expect(cli.preview(snapshot('nobody', 'text', 0))).resolves.toBeUndefined();
  });

  it('through the worker and delivery: a slowly written answer reaches the client before the turn ends', async () => {
    const config = testConfig();
    const pieces = ['The answer ', 'grows ', 'piece ', 'by ', 'piece.'];
    const agent = new SlowWriter(pieces, 250);
    await startCliStack(connect, config, cleanups, {
      agent,
      streams: () => true,
      livePace: { firstAfterMs: 0, intervalMs: 50 },
    });

    const client = await connect(config);
    const texts: Array<{ text: string; written: number }> = [];
    const got = await sendAndWait(client, {
      content: 'go',
      chatId: 'slow',
      timeoutMs: 20_000,
      onLive: (u) => texts.push({ text: u.text, written: agent.written }),
    });
    expect(got.content).toBe(pieces.join(''));
    // Text arrived while the model was still writing, and it only grew.
    expect(texts.length).toBeGreaterThan(0);
    expect(texts[0]!.written).toBeLessThan(pieces.length);
    expect(texts[0]!.text.length).toBeGreaterThan(0);
    for (let i = 1; i < texts.length; i++) expect(texts[i]!.text.startsWith(texts[i - 1]!.text)).toBe(true);
    expect(pieces.join('').startsWith(texts.at(-1)!.text)).toBe(true);
  });
});
