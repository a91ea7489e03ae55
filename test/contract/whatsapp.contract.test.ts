/**
 * The Channel contract for WhatsApp: the user is the fake Cloud API's signed
 * webhook POSTs to the gateway's webhook listener (every chat is a DM: a
 * number of its own per chat name, all on the allow-list; a stranger per
 * chat name off it), and the chat is what the business sent that number
 * over the Graph API — WhatsApp's formatting, read back as the user reads it
 * (`*bold*`, `_italic_`, `~strike~` marks gone outside code). Buttons are an
 * interactive message's reply buttons; a press is a `button_reply` message,
 * answered once magpie answered its POST. WhatsApp has no groups here, no
 * edits and so no live replies; typing is the read receipt's typing
 * indicator.
 */
import { closedPort } from '../fakes/net.js';
import { type FakeWhatsApp, startFakeWhatsApp } from '../fakes/whatsapp-server.js';
import { describeChannelContract } from './channel-contract.js';
import { type ChannelHarness, type ChatRef, fakeReaders, type HarnessFactory } from './harness.js';

/** What a user reads of a WhatsApp message: the formatting marks gone, code as written. */
export function readable(text: string): string {
  let inCode = false;
  return text
    .split('\n')
    .map((line) => {
      const fence = line.startsWith('```');
      if (fence) inCode = !inCode;
      if (inCode || fence) return line;
      return line
        .replace(/(^|[\s(])\*([^*\n]+)\*(?=$|[\s.,;:!?)])/g, '$1$2')
        .replace(/(^|[\s(])_([^_\n]+)_(?=$|[\s.,;:!?)])/g, '$1$2')
        .replace(/(^|[\s(])~([^~\n]+)~(?=$|[\s.,;:!?)])/g, '$1$2');
    })
    .join('\n');
}

/** How many owner chats a run may use (each a number of its own on the allow-list). */
const OWNER_NUMBERS = 40;

const whatsapp: HarnessFactory = {
  capabilities: {
    groups: false,
    pairing: true,
    media: true,
    typing: true,
    edits: false,
    live: false,
    redelivery: true,
    buttons: true,
    buttonsStay: true,
  },
  textLimit: 4096,
  async start(stack) {
    const port = await closedPort();
    const fake: FakeWhatsApp = await startFakeWhatsApp({
      token: 'EAAG-contract-whatsapp-token',
      appSecret: 'contract-app-secret',
      webhookUrl: `http://127.0.0.1:${port}/webhooks/whatsapp`,
    });
    const owners = Array.from({ length: OWNER_NUMBERS }, (_, i) => `4917000${String(1000 + i)}`);
    const chats = new Map<string, string>();
    const strangers = new Map<string, string>();
    /** The number of the person who speaks in `where`: the chat's owner number, or its stranger's. */
    const numberOf = (where: ChatRef = {}): string => {
      const name = where.chat ?? 'main';
      const map = where.stranger ? strangers : chats;
      let number = map.get(name);
      if (number === undefined) {
        number = where.stranger ? `44770090${String(1000 + strangers.size)}` : owners[chats.size];
        if (number === undefined) throw new Error('whatsapp harness: more chats than owner numbers');
        map.set(name, number);
      }
      return number;
    };
    await stack.startMagpie({
      WHATSAPP_ACCESS_TOKEN: fake.token,
      WHATSAPP_PHONE_NUMBER_ID: fake.phoneNumberId,
      WHATSAPP_APP_SECRET: fake.appSecret,
      WHATSAPP_VERIFY_TOKEN: 'contract-verify-token',
      WHATSAPP_API_ROOT: fake.apiRoot,
      WHATSAPP_ALLOW_FROM: owners.map((n) => `+${n}`).join(','),
      MAGPIE_WEBHOOK_PORT: String(port),
    });
    const shown = (where?: ChatRef) => fake.shown(numberOf(where)).map(readable);
    const buttonsIn = (where?: ChatRef) => fake.messages(numberOf(where)).filter((m) => m.buttons.length > 0);
    const expectTaken = (post: { status: number; text: string }) => {
      if (post.status !== 200) throw new Error(`whatsapp webhook answered ${post.status}: ${post.text}`);
    };
    const harness: ChannelHarness = {
      capabilities: whatsapp.capabilities,
      textLimit: whatsapp.textLimit,
      sessionKey: (where) => `whatsapp:${numberOf(where)}`,
      async userSays(text, options = {}) {
        const from = numberOf(options);
        const first = await fake.deliverMessage({
          from,
          name: options.stranger ? 'Stranger' : 'Owner',
          text,
        });
        expectTaken(first);
        // Meta delivers the same POST again when it did not get its 200 in time.
        if (options.twice) expectTaken(await fake.post(first.body));
      },
      ...fakeReaders(fake, { shown, typing: (where) => fake.typing(numberOf(where)) }),
      address: (where) => ({ channel: 'whatsapp', chatId: numberOf(where) }),
      senderId: (where = {}) => numberOf(where),
      async buttons(where) {
        return buttonsIn(where).map((m) => m.buttons.map((b) => b.title));
      },
      async pressButton(label, where = {}, options = {}) {
        const holder = buttonsIn(where).findLast((m) => m.buttons.some((b) => b.title === label));
        const button = holder?.buttons.find((b) => b.title === label);
        if (!holder || !button) throw new TypeError(`no button "${label}" in the chat`);
        // A person can only press buttons in their own chat: a stranger's press comes from elsewhere.
        const from = options.by === 'stranger' ? numberOf({ ...where, stranger: true }) : numberOf(where);
        const notification = fake.messageNotification({
          from,
          name: options.by === 'stranger' ? 'Stranger' : 'Owner',
          buttonReply: { id: button.id, title: button.title, contextId: holder.id },
        });
        const first = await fake.post(notification);
        expectTaken(first);
        if (options.twice) expectTaken(await fake.post(first.body));
      },
      close: () => fake.close(),
    };
    return harness;
  },
};

describeChannelContract('whatsapp', whatsapp);
