/**
 * The Channel contract for Signal: the user is the fake signal-cli's event
 * stream (a DM is a person writing to the account; a group chat is a Signal
 * group, addressed by a mention — a U+FFFC in the text with a `mentions`
 * entry naming the account), and the chat is what the account sent there
 * with `send`, read back as the person sees it: plain text, its style ranges
 * applied (a monospace block shown as a fence, with the italic label line
 * above it as its language). Each DM chat is its own person: the owners come
 * from a pool named in SIGNAL_ALLOW_FROM, every other one by number and the
 * rest by ACI with their number hidden, as Signal allows. Signal has no
 * buttons and no edits: replies arrive whole.
 */
import { randomUUID } from 'node:crypto';
import { type FakeSignalCli, type FakeSignalUser, startFakeSignalCli } from '../fakes/signal-cli.js';
import { describeChannelContract } from './channel-contract.js';
import { type ChannelHarness, type ChatRef, fakeReaders, type HarnessFactory } from './harness.js';

/** What a person reads of a message sent with style ranges: code blocks as fences with their language. */
export function readable(text: string, textStyle: string[]): string {
  const ranges = textStyle.map((s) => {
    const [start, length, style] = s.split(':');
    return { start: Number(start), length: Number(length), style: style ?? '' };
  });
  const italic = ranges.filter((r) => r.style === 'ITALIC');
  const blocks = ranges
    .filter((r) => r.style === 'MONOSPACE')
    .filter((r) => {
      const end = r.start + r.length;
      return (r.start === 0 || text[r.start - 1] === '\n') && (end === text.length || text[end] === '\n');
    })
    .filter((r) => text.slice(r.start, r.start + r.length).includes('\n'))
    .sort((a, b) => b.start - a.start);
  let out = text;
  for (const block of blocks) {
    const end = block.start + block.length;
    const lineStart = out.lastIndexOf('\n', block.start - 2) + 1;
    const label = italic.find((r) => r.start === lineStart && r.start + r.length === block.start - 1);
    const from = label ? lineStart : block.start;
    const lang = label ? out.slice(label.start, label.start + label.length) : '';
    out = `${out.slice(0, from)}\`\`\`${lang}\n${out.slice(block.start, end)}\n\`\`\`${out.slice(end)}`;
  }
  return out;
}

const POOL_SIZE = 40;

const signal: HarnessFactory = {
  capabilities: {
    groups: true,
    pairing: true,
    media: true,
    typing: true,
    edits: false,
    live: false,
    redelivery: true,
    buttons: false,
  },
  textLimit: 2000,
  async start(stack) {
    const fake: FakeSignalCli = await startFakeSignalCli();
    const pool: FakeSignalUser[] = Array.from({ length: POOL_SIZE }, (_, i) => ({
      uuid: randomUUID(),
      ...(i % 2 === 0 ? { number: `+1555100${String(i).padStart(4, '0')}` } : {}),
      name: `Owner ${i}`,
    }));
    const owners = new Map<string, FakeSignalUser>();
    const strangers = new Map<string, FakeSignalUser>();
    const groups = new Map<string, string>();
    const personIn = (where: ChatRef = {}): FakeSignalUser => {
      const name = where.chat ?? 'main';
      if (where.stranger) {
        let user = strangers.get(name);
        if (!user) {
          user = { uuid: randomUUID(), number: `+1555900${String(strangers.size).padStart(4, '0')}` };
          strangers.set(name, user);
        }
        return user;
      }
      // In groups the owner is always the pool's first person.
      const key = where.group ? 'group owner' : name;
      let user = owners.get(key);
      if (!user) {
        user = pool[owners.size];
        if (!user) throw new TypeError('the harness ran out of owners');
        owners.set(key, user);
      }
      return user;
    };
    const groupOf = (where: ChatRef): string => {
      const name = where.chat ?? 'main';
      let id = groups.get(name);
      if (!id) {
        id = Buffer.from(`group ${name} ${randomUUID()}`).toString('base64');
        groups.set(name, id);
      }
      return id;
    };
    /** The fake's chat: the group's id, or the person (by ACI: magpie's chat id). */
    const chatOf = (where: ChatRef = {}) => (where.group ? groupOf(where) : personIn(where).uuid);
    await stack.startMagpie({
      SIGNAL_RPC_URL: fake.url,
      SIGNAL_ACCOUNT: fake.account,
      SIGNAL_ALLOW_FROM: pool.map((p) => p.number ?? p.uuid).join(','),
    });
    const shown = (where?: ChatRef) => fake.messages(chatOf(where)).map((m) => readable(m.text, m.textStyle));
    const typing = (where?: ChatRef) => {
      const chat = chatOf(where);
      return fake.calls.filter(
        (c) =>
          c.method === 'sendTyping' &&
          c.params['stop'] !== true &&
          (c.params['groupId'] === chat || (c.params['recipient'] as unknown[] | undefined)?.[0] === chat),
      ).length;
    };
    const harness: ChannelHarness = {
      capabilities: signal.capabilities,
      textLimit: signal.textLimit,
      mention: '\uFFFC',
      sessionKey(where = {}) {
        if (!where.group) return `signal:${personIn(where).uuid}`;
        return `signal:group-${Buffer.from(groupOf(where), 'base64').toString('base64url')}`;
      },
      async userSays(text, options = {}) {
        const from = personIn(options);
        const mentioned = options.group && options.mention;
        const timestamp = fake.deliver({
          from,
          text: mentioned ? `\uFFFC ${text}` : text,
          ...(options.group ? { groupId: groupOf(options) } : {}),
          ...(mentioned ? { mentions: [{ start: 0, length: 1, number: fake.account, uuid: fake.aci }] } : {}),
        });
        if (options.twice) fake.redeliver(timestamp);
      },
      ...fakeReaders(fake, { shown, typing }),
      close: () => fake.close(),
    };
    return harness;
  },
};

describeChannelContract('signal', signal);
