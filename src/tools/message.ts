/**
 * message: sends a message to a chat in the middle of a turn (progress
 * notes, or answering in another chat). Defaults to the current chat.
 */
import { z } from 'zod';
import { describeError } from '../errors/index.js';
import { fail, ok, type Tool } from './types.js';

const parameters = z.object({
  content: z.string().min(1).describe('The message text'),
  channel: z
    .string()
    .min(1)
    .optional()
    .describe('Channel to send to (its name, as in a session key); default the current one'),
  chat_id: z.string().min(1).optional().describe('Chat to send to; default the current chat'),
});

/** The message tool; it sends through `ctx.send`. */
export function createMessageTool(): Tool<typeof parameters> {
  return {
    name: 'message',
    description:
      'Send a message to the user now, before your final answer (e.g. a progress note), ' +
      'or to another chat given channel and chat_id.',
    parameters,
    async execute({ content, channel, chat_id: chatId }, ctx) {
      const targetChannel = channel ?? ctx.channel;
      if (targetChannel !== ctx.channel && chatId === undefined) {
        return fail(`chat_id is required to send to another channel (${targetChannel})`);
      }
      const targetChat = chatId ?? ctx.chatId;
      const sameChat = targetChannel === ctx.channel && targetChat === ctx.chatId;
      try {
        await ctx.send({
          channel: targetChannel,
          chatId: targetChat,
          ...(sameChat && ctx.threadId !== undefined ? { threadId: ctx.threadId } : {}),
          content,
          kind: 'message',
        });
      } catch (err) {
        return fail(`message not sent: ${describeError(err)}`);
      }
      return ok('message sent');
    },
  };
}
