/**
 * A turn redone with messages that arrived since its earlier attempt: the answer the earlier
 * attempt stored still reaches the chat (under its own reply id, once), and the new messages are
 * answered under an id of their own. Real Redis, BullMQ, turn worker, AgentLoop and session
 * files; a scripted model.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { InboundMessageSchema } from '../../../src/messages/messages.js';
import { replyId, turnId } from '../../../src/messages/outbound-ids.js';
import { closeHarness, type Harness, harness, ScriptedProvider } from '../../unit/agent/loop-fixtures.js';
import { harnessPerTest, inbound, waitFor } from './helpers.js';

describe('a redone turn with new messages', () => {
  const start = harnessPerTest();
  let agent: Harness | undefined;
  afterEach(async () => {
    agent = await closeHarness(agent);
  });

  /** The earlier attempt: `first` answered and stored, its reply never queued (or lost with Redis). */
  async function earlierAttempt(provider: ScriptedProvider, chat: string) {
    agent = await harness(provider);
    const first = InboundMessageSchema.parse(inbound(chat, 'first question'));
    expect((await agent.agent.processMessage([first])).reply).toBe('answer one');
    return first;
  }

  it('sends the stored answer to the earlier message and answers the new one under its own id', async () => {
    const provider = new ScriptedProvider([{ content: 'answer one' }, { content: 'answer two' }]);
    const first = await earlierAttempt(provider, 'rs1');
    const bus = await start({ agent: agent!.agent });
    const second = inbound('rs1', 'second question');
    await bus.bus.publishInbound(first);
    await bus.bus.publishInbound(second);
    await waitFor(() => bus.channel.sent.length === 2, 10_000, 'both answers');
    expect(bus.channel.sent.map((m) => [m.id, m.content])).toEqual([
      [replyId(turnId('test:rs1', first.id)), 'answer one'],
      [replyId(turnId('test:rs1', second.id)), 'answer two'],
    ]);
    expect(provider.requests).toHaveLength(2); // the stored answer cost no model call
    const asked = provider.requests[1]!.messages.filter((m) => m.role === 'user');
    expect(asked.map((m) => JSON.stringify(m.content))).toEqual([
      expect.stringContaining('first question'),
      expect.stringContaining('second question'),
    ]);
  });

  it('when the earlier reply did go out, the new message is still answered and nothing is sent twice', async () => {
    const provider = new ScriptedProvider([{ content: 'answer one' }, { content: 'answer two' }]);
    const first = await earlierAttempt(provider, 'rs2');
    const bus = await start({ agent: agent!.agent });
    // The earlier attempt queued its reply and died before trimming the mailbox.
    await bus.bus.publishOutbound({
      id: replyId(turnId('test:rs2', first.id)),
      channel: 'test',
      chatId: 'rs2',
      content: 'answer one',
    });
    await waitFor(() => bus.channel.sent.length === 1, 5_000, 'earlier reply delivered');
    const second = inbound('rs2', 'second question');
    await bus.bus.publishInbound(first);
    await bus.bus.publishInbound(second);
    await waitFor(() => bus.channel.sent.length === 2, 10_000, 'the new answer');
    await waitFor(async () => (await bus.bus.mailbox('test:rs2').length()) === 0, 5_000, 'mailbox trimmed');
    await waitFor(async () => (await bus.bus.pendingJobs('outbound-test')) === 0, 5_000, 'outbound idle');
    expect(bus.channel.sent.map((m) => m.content)).toEqual(['answer one', 'answer two']);
  });

  it('redone once more after both answers were stored, it sends each again under its id and asks nothing', async () => {
    const provider = new ScriptedProvider([{ content: 'answer one' }, { content: 'answer two' }]);
    const first = await earlierAttempt(provider, 'rs3');
    const second = InboundMessageSchema.parse(inbound('rs3', 'second question'));
    // A second attempt stored the second answer too, and its replies were lost.
    const redo = await agent!.agent.processMessage([first, second]);
    expect(redo).toMatchObject({ reply: 'answer two', answersFrom: second.id });
    expect(redo.stored).toEqual([{ ids: [first.id], content: 'answer one' }]);
    const bus = await start({ agent: agent!.agent });
    await bus.bus.publishInbound(first);
    await bus.bus.publishInbound(second);
    await waitFor(() => bus.channel.sent.length === 2, 10_000, 'both answers');
    expect(bus.channel.sent.map((m) => [m.id, m.content])).toEqual([
      [replyId(turnId('test:rs3', first.id)), 'answer one'],
      [replyId(turnId('test:rs3', second.id)), 'answer two'],
    ]);
    expect(provider.requests).toHaveLength(2);
  });
});
