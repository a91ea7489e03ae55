/**
 * A button press, the rules every channel shares (channels/press.ts): which
 * data is a command a button may carry (OutboundActionSchema's), who may
 * press (a person on the allow-list; a bot or a stranger is ignored, and a
 * stranger is not offered pairing), and the message a press becomes — the
 * command, typed by the presser, in the button's chat.
 */
import { describe, expect, it } from 'vitest';
import type { Sender } from '../../../src/channels/access.js';
import { decidePress, isActionCommand, type Press } from '../../../src/channels/press.js';

/** An access check that allows `allowed` and counts its questions. */
function access(...allowed: string[]) {
  const asked: Sender[] = [];
  return {
    asked,
    async isAllowed(sender: Sender) {
      asked.push(sender);
      return allowed.includes(sender.id);
    },
  };
}

const press = (extra: Partial<Press> = {}): Press => ({
  id: 'telegram:-100:cbq:77',
  channel: 'telegram',
  data: '/approve K7QF2',
  presser: { id: '111', username: 'owner', displayName: 'Owner' },
  chatId: '-100',
  threadId: '7',
  isGroup: true,
  messageId: '555',
  metadata: { chatTitle: 'Friends' },
  ...extra,
});

describe('isActionCommand', () => {
  it('takes what OutboundActionSchema takes as a command, nothing else', () => {
    for (const ok of [
      '/approve K7QF2',
      '/deny K7QF2',
      '/stop',
      '/model gpt-4o_mini',
      `/a ${'x'.repeat(57)}`,
    ]) {
      expect(isActionCommand(ok), ok).toBe(true);
    }
    for (const bad of [
      'approve K7QF2',
      '/Approve K7QF2',
      '/approve K7:QF2',
      '/approve  K7QF2',
      '/approve K7QF2 ',
      '/approve\nK7QF2',
      `/a ${'x'.repeat(58)}`,
      '/',
      '',
      undefined,
      42,
    ]) {
      expect(isActionCommand(bad), String(bad)).toBe(false);
    }
  });
});

describe('decidePress', () => {
  it("publishes the command as the presser's message in the button's chat, replying to the question", async () => {
    const decision = await decidePress(press(), access('111'));
    expect(decision).toEqual({
      kind: 'publish',
      message: {
        id: 'telegram:-100:cbq:77',
        channel: 'telegram',
        chatId: '-100',
        threadId: '7',
        senderId: '111',
        senderName: 'Owner',
        content: '/approve K7QF2',
        platformMessageId: '555',
        isGroup: true,
        metadata: { chatTitle: 'Friends' },
      },
    });
  });

  it('ignores a press by a sender who may not talk to the bot (no pairing for a press)', async () => {
    const check = access('111');
    const decision = await decidePress(press({ presser: { id: '999', displayName: 'Eve' } }), check);
    expect(decision).toEqual({ kind: 'ignore', reason: 'pressed by a sender who may not talk to the bot' });
    expect(check.asked).toEqual([{ id: '999', displayName: 'Eve' }]);
  });

  it('ignores a bot, and data that is no command (marked invalid, so the channel warns) without asking Redis', async () => {
    const check = access('111');
    expect(await decidePress(press({ presser: { id: '111', bot: true } }), check)).toMatchObject({
      kind: 'ignore',
    });
    const foreign = await decidePress(press({ data: 'approve:K7QF2' }), check);
    expect(foreign).toMatchObject({ kind: 'ignore', invalid: true });
    expect(await decidePress(press({ data: undefined }), check)).toMatchObject({ invalid: true });
    expect(check.asked).toEqual([]);
  });
});
