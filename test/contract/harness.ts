/**
 * What the Channel contract suite (channel-contract.ts) needs from a channel,
 * and the part of the stack every channel shares: the scripted model (a fake
 * OpenAI whose answers a case can hold and release), a workspace, a key
 * prefix on the test Redis, and the role `magpie start` runs.
 *
 * A channel's harness hides its platform: it speaks as the user through the
 * platform's fake (or the CLI client) and reads the chat back as the user
 * would read it.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/app/config.js';
import { type RunningRole, startRole } from '../../src/app/roles.js';
import { approvePairing, type PairingRequest } from '../../src/bus/pairing-store.js';
import { silentLogger } from '../../src/log/index.js';
import { type InboundMessage, InboundMessageSchema } from '../../src/messages/messages.js';
import { type FakeOpenAI, type FakeReply, lastUserText, startFakeOpenAI } from '../fakes/openai-server.js';

/** What a channel has; a case that needs a missing one is not declared for it. */
export interface ChannelCapabilities {
  /** Group chats, where the bot answers only when mentioned. */
  groups: boolean;
  /** Unknown senders get a pairing code and are admitted by `magpie pairing approve`. */
  pairing: boolean;
  /** Photos and files reach the model. */
  media: boolean;
  /** A typing indicator while a turn runs. */
  typing: boolean;
  /** Sent messages can be edited (live replies grow by edits). */
  edits: boolean;
  /** The platform may deliver one message twice (a replayed update or event, a retried publish). */
  redelivery: boolean;
  /** Buttons under the bot's messages (`OutboundMessage.actions`): a press sends its command as the presser. */
  buttons: boolean;
  /** Answers show while the model writes them (edits, a terminal, a page); e-mail sends each answer whole. */
  live: boolean;
  /**
   * Buttons stay on a message after a press: the platform cannot change a sent message (WhatsApp),
   * so a second press is answered instead. @defaultValue false (a press takes them away)
   */
  buttonsStay?: boolean;
}

/** The capabilities of a text-only channel: no groups, pairing, media, typing indicator, edits or buttons; live answers. */
export function textOnlyCapabilities(redelivery: boolean): ChannelCapabilities {
  return {
    groups: false,
    pairing: false,
    media: false,
    typing: false,
    edits: false,
    redelivery,
    buttons: false,
    live: true,
  };
}

/** Which conversation: a name picks a chat of its own; the defaults are a DM from an allowed user. */
export interface ChatRef {
  /** Each distinct name is a chat of its own (a platform may have only one group for all). @defaultValue 'main' */
  chat?: string;
  /** The channel's group chat instead of a DM (only where `capabilities.groups`). @defaultValue false */
  group?: boolean;
  /** A sender not on the allow-list (only where `capabilities.pairing`). @defaultValue false */
  stranger?: boolean;
}

/** How the user says something. */
export interface SayOptions extends ChatRef {
  /** In a group: address the bot the platform's way (an @mention). @defaultValue false */
  mention?: boolean;
  /** Deliver the same platform message twice (only where `capabilities.redelivery`). @defaultValue false */
  twice?: boolean;
}

/** Who presses a button, and how often the platform delivers the press. */
export interface PressOptions {
  /** The chat's owner, or a stranger (someone not on the allow-list; only where `capabilities.pairing`). @defaultValue 'owner' */
  by?: 'owner' | 'stranger';
  /** The platform delivers the same press twice (a replayed update or event, a page posting it again). @defaultValue false */
  twice?: boolean;
}

/** Where an OutboundMessage to a chat goes. */
export interface ChatAddress {
  channel: string;
  chatId: string;
  threadId?: string;
}

/** What a channel is, known before anything starts (the contract picks its cases by it). */
export interface ChannelTraits {
  readonly capabilities: ChannelCapabilities;
  /** The longest message the platform shows, in characters; undefined when it has no limit. */
  readonly textLimit: number | undefined;
}

/** One channel as its user sees it, over the real stack. */
export interface ChannelHarness extends ChannelTraits {
  /** How the platform writes a mention of the bot into the text (groups only). */
  readonly mention?: string;
  /** The session key the bus keeps the conversation under (its mailbox). */
  sessionKey(where?: ChatRef): string;
  /** Sends a message as the user. Resolves once the platform (or client) has it, not when answered. */
  userSays(text: string, options?: SayOptions): Promise<void>;
  /** The messages the chat finally shows, in order, as the user reads them (formatting undone). */
  replies(where?: ChatRef): Promise<string[]>;
  /** Resolves with {@link replies} once the chat shows at least `n` messages. */
  waitForReplies(n: number, where?: ChatRef, timeoutMs?: number): Promise<string[]>;
  /** How many typing indicators the chat was sent so far. */
  typingSeen(where?: ChatRef): Promise<number>;
  /** Resolves once the chat was sent at least `n` typing indicators. */
  waitForTyping(n: number, where?: ChatRef, timeoutMs?: number): Promise<void>;
  /**
   * How many times the bot edited messages in the chat (live replies: an answer appears early and
   * grows by edits). Present where `capabilities.edits`.
   */
  edits?(where?: ChatRef): Promise<number>;
  /**
   * What the user sees of an answer still being written (live replies), where the chat shows it
   * apart from finished replies (the CLI's terminal). Absent: {@link replies} shows it (a message
   * that grows by edits).
   */
  partial?(where?: ChatRef): Promise<string>;
  /** Where the bot's messages to the chat go (an OutboundMessage's address). Present where `capabilities.buttons`. */
  address?(where?: ChatRef): ChatAddress;
  /**
   * The platform's id of the person who speaks in `where` (the owner; with `stranger`, that chat's
   * stranger): an InboundMessage's `senderId`. Present where `capabilities.buttons`.
   */
  senderId?(where?: ChatRef): string;
  /**
   * The labels of the buttons the chat shows now, a list per message that shows any, in order.
   * Present where `capabilities.buttons`.
   */
  buttons?(where?: ChatRef): Promise<string[][]>;
  /**
   * Presses the button labelled `label` on the newest message of the chat showing it. Resolves once
   * the platform has the press answered (every delivery of it, with `twice`): the adapter has
   * decided about it. Present where `capabilities.buttons`.
   */
  pressButton?(label: string, where?: ChatRef, options?: PressOptions): Promise<void>;
  /** Stops the platform's fake (after the role stopped). Idempotent. */
  close(): Promise<void>;
}

/**
 * The reading half of a harness over a platform fake: `shown` and `typing`
 * read what the fake recorded for a chat, the waits poll them with the
 * fake's own `waitFor`. `shownCount` counts the shown messages where that is
 * cheaper than reading them (defaults to `shown(where).length`).
 */
export function fakeReaders(
  fake: { waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void> },
  read: {
    shown(where?: ChatRef): string[];
    typing(where?: ChatRef): number;
    shownCount?(where?: ChatRef): number;
  },
): Pick<ChannelHarness, 'replies' | 'waitForReplies' | 'typingSeen' | 'waitForTyping'> {
  const count = read.shownCount ?? ((where?: ChatRef) => read.shown(where).length);
  return {
    async replies(where) {
      return read.shown(where);
    },
    async waitForReplies(n, where, timeoutMs) {
      await fake.waitFor(() => count(where) >= n, timeoutMs);
      return read.shown(where);
    },
    async typingSeen(where) {
      return read.typing(where);
    },
    async waitForTyping(n, where, timeoutMs) {
      await fake.waitFor(() => read.typing(where) >= n, timeoutMs);
    },
  };
}

/** What a harness factory gets: a way to start magpie against its platform. */
export interface ContractStack {
  /** Starts the role `magpie start` runs, with the shared environment plus the platform's variables. */
  startMagpie(platformEnv: Record<string, string>): Promise<RunningRole>;
}

/** A channel's traits and how to build its harness: start its platform fake, then magpie through `stack`. */
export interface HarnessFactory extends ChannelTraits {
  start(stack: ContractStack): Promise<ChannelHarness>;
}

/** A code block with characters every format must escape (`<`, `&`), one numbered line each. */
export const CODE = Array.from(
  { length: 110 },
  (_, i) => `let value${i} = ${i} < 50 && flag; // line ${i}`,
).join('\n');

/** A model answer over 6,000 characters: prose, a long `js` block, prose. */
export const LONG_REPLY = `${'Intro **words** here. '.repeat(120)}\n\n\`\`\`js\n${CODE}\n\`\`\`\n\n${'Outro words. '.repeat(100)}`;

/** The answer to `slowly please`: {@link SLOW_PIECES} sentences, written one every {@link SLOW_PIECE_MS}. */
export const SLOW_REPLY = Array.from({ length: 12 }, (_, i) => `Sentence ${i + 1} of a slow answer.`).join(
  ' ',
);
export const SLOW_PIECES = 12;
export const SLOW_PIECE_MS = 300;

/**
 * The scripted model. `hold:<key>` in the user's message holds the answer
 * (`held <key> done`) until `release(key)`; `long please` answers
 * {@link LONG_REPLY}; `slowly please` writes {@link SLOW_REPLY} over about
 * 3.5 s; anything else is echoed (`echo: <end of the text>`).
 */
export class ScriptedModel {
  private readonly gates = new Map<string, { held: Deferred; released: Deferred }>();

  constructor(readonly openai: FakeOpenAI) {}

  /** Resolves once a request holding `key` reached the model (its turn is running). */
  held(key: string): Promise<void> {
    return this.gate(key).held.promise;
  }

  /** Lets the answers held under `key` go (now and later). */
  release(key: string): void {
    this.gate(key).released.resolve();
  }

  /** Releases every gate (shutdown). */
  releaseAll(): void {
    for (const gate of this.gates.values()) gate.released.resolve();
  }

  /** The user texts the model was sent (the last user message of each request, context block removed). */
  userTexts(): string[] {
    return this.openai.requests.map(lastUserText);
  }

  /**
   * @internal the fake OpenAI's responder. `run: CMD` has exec run CMD (a risky command asks
   * first); a tool's result is answered `done: <result>`.
   */
  async answer(text: string, lastRole?: string, lastContent?: string): Promise<FakeReply> {
    if (lastRole === 'tool') return { content: `done: ${(lastContent ?? '').slice(0, 200)}` };
    const run = /run: (.+)$/m.exec(text)?.[1];
    if (run !== undefined)
      return { toolCalls: [{ name: 'exec', arguments: JSON.stringify({ command: run }) }] };
    const hold = /hold:([\w-]+)/.exec(text)?.[1];
    if (hold !== undefined) {
      const gate = this.gate(hold);
      gate.held.resolve();
      await gate.released.promise;
      return { content: `held ${hold} done` };
    }
    if (text.includes('long please')) return { content: LONG_REPLY };
    if (text.includes('slowly please'))
      return { content: SLOW_REPLY, pieces: SLOW_PIECES, pieceDelayMs: SLOW_PIECE_MS };
    return { content: `echo: ${text.slice(-60)}` };
  }

  private gate(key: string): { held: Deferred; released: Deferred } {
    let gate = this.gates.get(key);
    if (!gate) {
      gate = { held: deferred(), released: deferred() };
      this.gates.set(key, gate);
    }
    return gate;
  }
}

/** Everything a contract run starts, and its stop. */
export interface ContractRun {
  model: ScriptedModel;
  harness: ChannelHarness;
  /** The running role (its bus reads mailboxes and approves pairing codes). */
  role(): RunningRole;
  /**
   * Every message the channels published on the bus, in order: a delivery the platform repeated
   * is here each time the channel published it (the bus's mailbox takes one id once).
   */
  readonly inbound: InboundMessage[];
  /** `magpie pairing approve CODE`. */
  approve(code: string): Promise<PairingRequest | undefined>;
  stop(): Promise<void>;
}

/**
 * Starts the fake model, a workspace and magpie with `makeHarness`'s platform, on the
 * Redis at `redis`: a URL, or the variables that name it instead (`REDIS_CLUSTER_NODES`).
 */
export async function startContractRun(
  redis: string | Record<string, string>,
  makeHarness: HarnessFactory,
): Promise<ContractRun> {
  const openai = await startFakeOpenAI();
  const model = new ScriptedModel(openai);
  openai.setResponder((req) => {
    const last = (req.body.messages as Array<{ role: string; content: unknown }>).at(-1);
    return model.answer(lastUserText(req), last?.role, typeof last?.content === 'string' ? last.content : '');
  });
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-contract-'));
  const inbound: InboundMessage[] = [];
  let role: RunningRole | undefined;
  let harness: ChannelHarness | undefined;
  const stop = async () => {
    model.releaseAll();
    await role?.stop();
    await harness?.close();
    await openai.close();
    rmSync(workspace, { recursive: true, force: true });
  };
  try {
    harness = await makeHarness.start({
      async startMagpie(platformEnv) {
        const config = parseConfig({
          ...(typeof redis === 'string' ? { REDIS_URL: redis } : redis),
          MAGPIE_QUEUE_PREFIX: `test-${randomUUID()}`,
          MAGPIE_WORKSPACE: workspace,
          OPENAI_API_KEY: 'test-key',
          OPENAI_BASE_URL: openai.baseURL,
          MAGPIE_MODEL: 'fake-model',
          MAGPIE_HEARTBEAT_INTERVAL: '0',
          // Live replies stay as configured by default (on): replies() reads what a chat finally
          // shows, so every case holds whether an answer arrived whole or grew by edits.
          ...platformEnv,
        });
        role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 4 });
        recordInbound(role, inbound);
        return role;
      },
    });
  } catch (err) {
    await stop();
    throw err;
  }
  const running = (): RunningRole => {
    if (!role) throw new TypeError('the harness did not start magpie');
    return role;
  };
  return {
    model,
    harness,
    role: running,
    inbound,
    approve: (code) => approvePairing(running().bus.redis, running().bus.prefix, code),
    stop,
  };
}

/**
 * Records what the role's channels publish, on the way through: the gateway's bus (the one every
 * channel and the web chat's routes were given) publishes each message as before, and each one it
 * accepted is appended to `into`.
 */
function recordInbound(role: RunningRole, into: InboundMessage[]): void {
  const bus = role.bus;
  const publish = bus.publishInbound.bind(bus);
  bus.publishInbound = async (message) => {
    await publish(message);
    into.push(InboundMessageSchema.parse(message));
  };
}

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
