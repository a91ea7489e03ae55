/**
 * The Channel contract for the web chat: the platform is the dashboard's
 * `/chat` HTTP API, spoken as the chat page speaks it (a same-origin JSON
 * POST with the signed-in cookie), and the chat is what the page finally
 * shows: the `message` events of the chat's event stream, each live answer
 * replaced by its final message. The owner is whoever holds the dashboard
 * token, so there are no strangers, groups or pairing; typing is one
 * start/stop pair per turn (not repeated), so the typing case, which counts
 * repeated indicators, is not declared; a POST is answered once and not
 * redelivered by the platform. Buttons are a message event's actions; a
 * press is what the page posts on a click (the command, under the message's
 * press id), and a message's buttons are gone once the chat's stream carries
 * that press back.
 */
import { randomUUID } from 'node:crypto';
import { freePort } from '../fakes/redis-server.js';
import { waitFor } from '../fakes/wait-for.js';
import {
  type EventReader,
  openEvents,
  pageHeaders,
  signedInCookie,
  webRequest,
} from '../fakes/web-client.js';
import { describeChannelContract } from './channel-contract.js';
import { type ChannelHarness, type ChatRef, type HarnessFactory, textOnlyCapabilities } from './harness.js';

const TOKEN = 'contract-web-token';

/**
 * What the page shows now: its messages, and below them the answer being
 * written (the newest live snapshot of a turn whose final message has not come).
 */
function showing(reader: EventReader): string {
  const finished = new Set(
    reader.events.flatMap((e) => (e.event === 'message' ? [(e.data as { live?: string }).live] : [])),
  );
  const live = reader.events.filter(
    (e) => e.event === 'live' && !finished.has((e.data as { turn: string }).turn),
  );
  const writing = live.length > 0 ? [(live.at(-1)!.data as { text: string }).text] : [];
  return [...shown(reader), ...writing].join('\n');
}

/** The final texts a chat shows: message events, in order. */
function shown(reader: EventReader): string[] {
  return reader.events.filter((e) => e.event === 'message').map((e) => (e.data as { text: string }).text);
}

/** The id the page posts a press on message `messageId` under (app-script.ts's `pressIdOf`). */
function pressIdOf(messageId: string): string {
  return `press-${messageId.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64);
}

interface ButtonsOf {
  pressId: string;
  actions: Array<{ label: string; command: string }>;
}

/** The messages showing buttons: those with actions whose press the stream has not carried back. */
function buttonsShown(reader: EventReader): ButtonsOf[] {
  const pressed = new Set(
    reader.events.filter((e) => e.event === 'user').map((e) => (e.data as { id: string }).id),
  );
  return reader.events.flatMap((e) => {
    const data = e.data as { id: string; actions?: ButtonsOf['actions'] };
    if (e.event !== 'message' || !data.actions) return [];
    const pressId = pressIdOf(data.id);
    return pressed.has(pressId) ? [] : [{ pressId, actions: data.actions }];
  });
}

const web: HarnessFactory = {
  capabilities: { ...textOnlyCapabilities(false), buttons: true },
  textLimit: undefined,
  async start(stack) {
    const port = await freePort();
    await stack.startMagpie({ MAGPIE_DASHBOARD_PORT: String(port), MAGPIE_DASHBOARD_TOKEN: TOKEN });
    const run = randomUUID().slice(0, 8);
    const idOf = (where: ChatRef = {}) => `contract-${where.chat ?? 'main'}-${run}`;
    const readers = new Map<string, EventReader>();
    const readerOf = async (where: ChatRef = {}): Promise<EventReader> => {
      const id = idOf(where);
      let reader = readers.get(id);
      if (!reader) {
        // Opened before anything is sent, as the page does, so no answer is missed.
        reader = await openEvents(port, `/chat/events?chat=${id}`, { cookie: signedInCookie(port, TOKEN) });
        if (reader.status !== 200) throw new TypeError(`the event stream answered ${reader.status}`);
        const open = reader;
        await waitFor(() => open.events.some((e) => e.event === 'ready'), 10_000, 'the stream ready');
        readers.set(id, reader);
      }
      return reader;
    };
    /** Posts as the page does: a text, under the page's id for it when given. */
    const post = async (where: ChatRef, text: string, id?: string) => {
      await readerOf(where);
      const answer = await webRequest(port, 'POST', '/chat/messages', {
        headers: pageHeaders(port, TOKEN),
        body: JSON.stringify({ chat: idOf(where), text, ...(id ? { id } : {}) }),
      });
      if (answer.status !== 202)
        throw new TypeError(`POST /chat/messages answered ${answer.status}: ${answer.body}`);
    };
    const harness: ChannelHarness = {
      capabilities: web.capabilities,
      textLimit: web.textLimit,
      sessionKey: (where) => `web:${idOf(where)}`,
      async userSays(text, options = {}) {
        await post(options, text);
      },
      address: (where) => ({ channel: 'web', chatId: idOf(where) }),
      senderId: () => 'web',
      async buttons(where) {
        return buttonsShown(await readerOf(where)).map((m) => m.actions.map((a) => a.label));
      },
      async pressButton(label, where = {}, options = {}) {
        if (options.by === 'stranger') throw new TypeError('the web chat has no strangers');
        const holder = buttonsShown(await readerOf(where)).findLast((m) =>
          m.actions.some((a) => a.label === label),
        );
        const action = holder?.actions.find((a) => a.label === label);
        if (!holder || !action) throw new TypeError(`no button "${label}" in the chat`);
        // A click, and with `twice` a second page (another tab) pressing the same question.
        await post(where, action.command, holder.pressId);
        if (options.twice) await post(where, action.command, holder.pressId);
      },
      async replies(where) {
        return shown(await readerOf(where));
      },
      async partial(where) {
        return showing(await readerOf(where));
      },
      async waitForReplies(n, where, timeoutMs) {
        const reader = await readerOf(where);
        await reader.until(() => shown(reader).length >= n, `${n} messages in ${idOf(where)}`, timeoutMs);
        return shown(reader);
      },
      async typingSeen(where) {
        return (await readerOf(where)).events.filter(
          (e) => e.event === 'typing' && (e.data as { active: boolean }).active,
        ).length;
      },
      async waitForTyping(n, where, timeoutMs) {
        const reader = await readerOf(where);
        await reader.until(
          (events) =>
            events.filter((e) => e.event === 'typing' && (e.data as { active: boolean }).active).length >= n,
          `${n} typing starts`,
          timeoutMs,
        );
      },
      async close() {
        for (const reader of readers.values()) reader.close();
      },
    };
    return harness;
  },
};

describeChannelContract('web', web);
