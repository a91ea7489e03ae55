/**
 * The Channel contract's harness for the CLI channel: the user is the client side
 * (`sendAndWait`, as `magpie send` and `magpie chat` use it) and the chat is
 * every answer the client received — replies to its requests, mid-turn
 * messages, and what `onUnsolicited` hears for the chat. No groups, pairing,
 * typing or text limit; a publish the client retried is the same message twice.
 */
import { randomUUID } from 'node:crypto';
import type { Bus } from '../../src/bus/bus.js';
import { onUnsolicited, sendAndWait } from '../../src/channels/cli/client.js';
import { waitFor } from '../fakes/wait-for.js';
import { type ChannelHarness, type ChatRef, type HarnessFactory, textOnlyCapabilities } from './harness.js';

/** One CLI chat: what the user has read, and the failures of requests that got no answer. */
interface CliChat {
  id: string;
  shown: string[];
  /** The answer being written, as the client last heard it (live snapshots). */
  live: string;
  failures: unknown[];
  unsubscribe: () => Promise<void>;
}

/** The CLI channel's harness, for its contract runs (cli.contract.test.ts, cli-cluster.contract.test.ts). */
export const cli: HarnessFactory = {
  capabilities: textOnlyCapabilities(true),
  textLimit: undefined,
  async start(stack) {
    const role = await stack.startMagpie({});
    const bus: Bus = role.bus;
    const chats = new Map<string, CliChat>();
    const run = randomUUID().slice(0, 8);
    const idOf = (where: ChatRef = {}) => `contract-${where.chat ?? 'main'}-${run}`;
    const chatOf = async (where: ChatRef = {}): Promise<CliChat> => {
      const name = where.chat ?? 'main';
      let chat = chats.get(name);
      if (!chat) {
        const id = idOf(where);
        const shown: string[] = [];
        // Before anything is sent, so no answer to the chat is missed.
        const unsubscribe = await onUnsolicited(bus, id, (m) => shown.push(m.content));
        chat = { id, shown, live: '', failures: [], unsubscribe };
        chats.set(name, chat);
      }
      return chat;
    };
    const settled = (chat: CliChat) => {
      if (chat.failures.length > 0) throw chat.failures[0];
    };
    const harness: ChannelHarness = {
      capabilities: cli.capabilities,
      textLimit: cli.textLimit,
      sessionKey: (where) => `cli:${idOf(where)}`,
      async userSays(text, options = {}) {
        const chat = await chatOf(options);
        if (options.twice) {
          // A client that published again after losing the answer to its first publish: one
          // message, one id, twice. Without a reply address the answer reaches onUnsolicited.
          const message = {
            id: `cli:${randomUUID()}`,
            channel: 'cli',
            chatId: chat.id,
            senderId: 'cli',
            content: text,
          };
          await bus.publishInbound(message);
          await bus.publishInbound(message);
          return;
        }
        // Not awaited: the answer may take a while (a /stop is sent while it runs).
        sendAndWait(bus, {
          content: text,
          chatId: chat.id,
          timeoutMs: 30_000,
          onMessage: (m) => chat.shown.push(m.content),
          onLive: (update) => {
            chat.live = update.text;
          },
        }).then(
          (reply) => {
            chat.live = '';
            chat.shown.push(reply.content);
          },
          (err: unknown) => chat.failures.push(err),
        );
      },
      async replies(where) {
        const chat = await chatOf(where);
        settled(chat);
        return [...chat.shown];
      },
      async waitForReplies(n, where, timeoutMs) {
        const chat = await chatOf(where);
        await waitFor(
          () => {
            settled(chat);
            return chat.shown.length >= n;
          },
          timeoutMs,
          `${n} answers in ${chat.id}`,
        );
        return [...chat.shown];
      },
      async partial(where) {
        const chat = await chatOf(where);
        settled(chat);
        return [...chat.shown, chat.live].join('\n');
      },
      async typingSeen() {
        return 0;
      },
      async waitForTyping() {
        throw new TypeError('the CLI shows no typing');
      },
      async close() {
        for (const chat of chats.values()) await chat.unsubscribe();
      },
    };
    return harness;
  },
};
