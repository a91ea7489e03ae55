/**
 * The Channel contract for the OpenAI-compatible API: the user is a program
 * using the official `openai` client (streaming, as Open WebUI does), each
 * chat a session named by `X-Magpie-Session`, and the chat is every message
 * the answers carried (magpie's `messages` extension on the last chunk: an
 * `/approve` answer carries the approval's note and the resumed turn's
 * reply). A client retrying a request sends the same Idempotency-Key: one
 * message, answered once. No groups, pairing, typing or text limit.
 */
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { closedPort } from '../fakes/net.js';
import { waitFor } from '../fakes/wait-for.js';
import { describeChannelContract } from './channel-contract.js';
import { type ChannelHarness, type ChatRef, type HarnessFactory, textOnlyCapabilities } from './harness.js';

const KEY = 'contract-key-0123456789abcdefghij';

/** One session: what the user has read, the answer being streamed, and failed requests. */
interface ApiChat {
  shown: string[];
  live: string;
  failures: unknown[];
}

const api: HarnessFactory = {
  capabilities: textOnlyCapabilities(true),
  textLimit: undefined,
  async start(stack) {
    const port = await closedPort();
    await stack.startMagpie({ MAGPIE_API_PORT: String(port), MAGPIE_API_KEYS: `${KEY}:contract` });
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: KEY, maxRetries: 0 });
    const chats = new Map<string, ApiChat>();
    const run = randomUUID().slice(0, 8);
    const sessionOf = (where: ChatRef = {}) => `${where.chat ?? 'main'}-${run}`;
    const chatOf = (where: ChatRef = {}): ApiChat => {
      const name = where.chat ?? 'main';
      let chat = chats.get(name);
      if (!chat) {
        chat = { shown: [], live: '', failures: [] };
        chats.set(name, chat);
      }
      return chat;
    };
    const ask = async (chat: ApiChat, text: string, session: string, idempotencyKey?: string) => {
      const stream = await client.chat.completions.create(
        { model: 'main', messages: [{ role: 'user', content: text }], stream: true },
        {
          headers: {
            'X-Magpie-Session': session,
            ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}),
          },
        },
      );
      let live = '';
      let messages: string[] | undefined;
      for await (const chunk of stream) {
        live += chunk.choices[0]?.delta?.content ?? '';
        chat.live = live;
        const extension = (chunk as unknown as { magpie?: { messages: string[] } }).magpie;
        if (extension) messages = extension.messages;
      }
      return messages ?? [live];
    };
    const settled = (chat: ApiChat) => {
      if (chat.failures.length > 0) throw chat.failures[0];
    };
    const harness: ChannelHarness = {
      capabilities: api.capabilities,
      textLimit: api.textLimit,
      sessionKey: (where) => `api:contract/${sessionOf(where)}`,
      async userSays(text, options = {}) {
        const chat = chatOf(options);
        const session = sessionOf(options);
        const deliver = (messages: string[]) => {
          chat.live = '';
          chat.shown.push(...messages);
        };
        if (options.twice) {
          // A client that lost the first attempt's connection and retried with the same key:
          // the user reads the retry's answer.
          const idempotency = randomUUID();
          void ask({ shown: [], live: '', failures: [] }, text, session, idempotency).catch(() => undefined);
          ask(chat, text, session, idempotency).then(deliver, (err: unknown) => chat.failures.push(err));
          return;
        }
        // Not awaited: the answer may take a while (a /stop is sent while it runs).
        ask(chat, text, session).then(deliver, (err: unknown) => chat.failures.push(err));
      },
      async replies(where) {
        const chat = chatOf(where);
        settled(chat);
        return [...chat.shown];
      },
      async waitForReplies(n, where, timeoutMs) {
        const chat = chatOf(where);
        await waitFor(
          () => {
            settled(chat);
            return chat.shown.length >= n;
          },
          timeoutMs,
          `${n} answers in ${sessionOf(where)}`,
        );
        return [...chat.shown];
      },
      async partial(where) {
        const chat = chatOf(where);
        settled(chat);
        return [...chat.shown, chat.live].join('\n');
      },
      async typingSeen() {
        return 0;
      },
      async waitForTyping() {
        throw new TypeError('the API shows no typing');
      },
      async close() {},
    };
    return harness;
  },
};

describeChannelContract('api', api);
