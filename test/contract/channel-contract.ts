/**
 * The Channel contract: one set of cases every channel passes through the
 * real stack `magpie start` runs (platform fake → real adapter → real Bus on
 * the test Redis → real turn worker and agent → fake OpenAI → outbound queue
 * → adapter → platform fake). Each channel runs it from its own
 * `<name>.contract.test.ts` with a harness (harness.ts) that hides the
 * platform. A case that needs something a channel does not have (groups,
 * pairing, typing, a text limit, redelivery) is not declared for it.
 *
 * Cases that must show that nothing more happens wait for a later event
 * that would come after the unwanted one (a marker message, another chat's
 * typing), never for a fixed time.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { waitFor } from '../fakes/wait-for.js';
import {
  type ChannelCapabilities,
  type ChannelHarness,
  type ChannelTraits,
  type ChatRef,
  CODE,
  type ContractRun,
  type HarnessFactory,
  SLOW_REPLY,
  startContractRun,
} from './harness.js';

/** One case: its name, what the channel must have, and its body. */
interface ContractCase {
  name: string;
  needs?: (keyof ChannelCapabilities)[];
  /** Only where the channel lacks these. */
  lacks?: (keyof ChannelCapabilities)[];
  /** Only where the platform has a text limit (true) or has none (false). */
  limit?: boolean;
  run(run: ContractRun): Promise<void>;
}

const TURN_MS = 20_000;

/** The buttons of an approval question about an `echo` command, as their labels show. */
const QUESTION_BUTTONS = ['Allow once', 'Always allow echo', 'Deny'];

const CASES: ContractCase[] = [
  {
    name: 'answers a DM',
    async run({ harness }) {
      await harness.userSays('hello there', { chat: 'dm' });
      const replies = await harness.waitForReplies(1, { chat: 'dm' }, TURN_MS);
      expect(replies).toHaveLength(1);
      expect(replies[0]).toContain('echo:');
      expect(replies[0]).toContain('hello there');
    },
  },
  {
    name: 'a reply longer than the limit arrives as ordered parts under it, code fences balanced and the code intact',
    limit: true,
    async run({ harness }) {
      await harness.userSays('long please', { chat: 'long' });
      const parts = await waitFor(
        async () => {
          const shown = await harness.replies({ chat: 'long' });
          return shown.some((p) => p.includes('Outro')) && shown;
        },
        TURN_MS,
        'the last part',
      );
      expect(parts.length).toBeGreaterThanOrEqual(2);
      for (const part of parts) {
        expect(part.length).toBeLessThanOrEqual(harness.textLimit!);
        expect(fenceLines(part).length % 2).toBe(0);
      }
      expect(parts[0]).toMatch(/^Intro words here\.|^Intro \*\*words\*\* here\./);
      expect(parts.at(-1)).toContain('Outro words.');
      // Every part that holds code opens its block again, language kept.
      const codeParts = parts.filter((p) => p.includes('let value'));
      expect(codeParts.length).toBeGreaterThanOrEqual(2);
      for (const part of codeParts) expect(fenceLines(part)[0]).toBe('```js');
      expect(codeLines(parts)).toEqual(CODE.split('\n'));
    },
  },
  {
    name: 'a long reply arrives whole, code intact',
    limit: false,
    async run({ harness }) {
      await harness.userSays('long please', { chat: 'long' });
      const [reply] = await harness.waitForReplies(1, { chat: 'long' }, TURN_MS);
      expect(reply).toContain('Outro words.');
      expect(codeLines([reply!])).toEqual(CODE.split('\n'));
    },
  },
  {
    name: 'ignores a group message without a mention and answers one with it, the mention stripped',
    needs: ['groups'],
    async run({ harness, model }) {
      const before = model.userTexts().length;
      await harness.userSays('no mention here', { group: true });
      await harness.userSays('mentioned question', { group: true, mention: true });
      const replies = await harness.waitForReplies(1, { group: true }, TURN_MS);
      // Sent in this order to one chat: had the first been taken, the model would have seen it first.
      const seen = model.userTexts().slice(before).join('\n');
      expect(seen).toContain('mentioned question');
      expect(seen).not.toContain('no mention here');
      expect(seen).not.toContain(harness.mention!);
      expect(replies).toHaveLength(1);
      expect(replies[0]).toContain('mentioned question');
    },
  },
  {
    // Strangers exist where pairing does (an allow-list); a group offers them nothing.
    name: "in a group, a stranger is neither answered nor offered a code, and cannot /stop the owner's turn",
    needs: ['groups', 'pairing'],
    async run({ harness, model, role }) {
      const group = { group: true, chat: 'guarded', mention: true };
      const mailbox = role().bus.mailbox(harness.sessionKey(group));
      // A platform may have one group for every case: read only what this case adds.
      const before = (await harness.replies(group)).length;
      await harness.userSays('group work hold:guarded', group);
      await model.held('guarded');
      await harness.userSays('/stop', { ...group, stranger: true });
      await harness.userSays('tell me your secrets', { ...group, stranger: true });
      // The owner's next message is queued behind the held turn; the strangers' came before it.
      await harness.userSays('after the strangers', group);
      await waitFor(async () => (await mailbox.length()) === 2, TURN_MS, "the owner's next message queued");
      model.release('guarded');
      const replies = (await harness.waitForReplies(before + 2, group, TURN_MS)).slice(before);
      expect(replies).toEqual(['held guarded done', expect.stringContaining('after the strangers')]);
      expect(model.userTexts().join('\n')).not.toContain('tell me your secrets');
    },
  },
  {
    name: 'gives an unknown sender a pairing code and answers after approval',
    needs: ['pairing'],
    async run({ harness, model, approve }) {
      const stranger = { chat: 'pairing', stranger: true };
      await harness.userSays('let me in', stranger);
      const [first] = await harness.waitForReplies(1, stranger, TURN_MS);
      const code = /approve ([A-Z2-9]{6})/.exec(first!)?.[1];
      expect(code).toBeDefined();
      expect(model.userTexts().join('\n')).not.toContain('let me in');
      expect(await approve(code!)).toMatchObject({ code });
      await harness.userSays('now hello', stranger);
      const replies = await harness.waitForReplies(2, stranger, TURN_MS);
      expect(replies).toHaveLength(2);
      expect(replies[1]).toContain('now hello');
    },
  },
  {
    name: '/stop during a slow turn stops it and the user reads the stop answer',
    async run({ harness, model }) {
      const chat = { chat: 'stop' };
      await harness.userSays('work on hold:stop', chat);
      await model.held('stop');
      // Any case, with an argument: the one parser (src/commands/parse.ts) reads it as /stop.
      await harness.userSays('/STOP now', chat);
      const stopped = await harness.waitForReplies(2, chat, TURN_MS);
      expect([...stopped].sort()).toEqual(['Stopped.', 'Stopping.']);
      // The held answer, were the turn still running, would come before the next message's.
      model.release('stop');
      await harness.userSays('after the stop', chat);
      const replies = await harness.waitForReplies(3, chat, TURN_MS);
      expect(replies).toHaveLength(3);
      expect(replies[2]).toContain('after the stop');
      expect(replies.join('\n')).not.toContain('held stop done');
    },
  },
  {
    name: 'a slow turn shows typing, and typing stops after the reply',
    needs: ['typing'],
    async run({ harness, model }) {
      const chat = { chat: 'typing' };
      const other = { chat: 'typing-marker' };
      await harness.userSays('think hold:typing', chat);
      await model.held('typing');
      await harness.waitForTyping(1, chat, TURN_MS);
      expect(await harness.replies(chat)).toEqual([]);
      model.release('typing');
      expect(await harness.waitForReplies(1, chat, TURN_MS)).toEqual(['held typing done']);
      const typedBefore = await harness.typingSeen(chat);
      // Another chat's slow turn types again one interval after it starts; typing still
      // running here would have repeated before that.
      await harness.userSays('think hold:typing-marker', other);
      await harness.waitForTyping(2, other, TURN_MS);
      expect(await harness.typingSeen(chat)).toBe(typedBefore);
      model.release('typing-marker');
      await harness.waitForReplies(1, other, TURN_MS);
    },
  },
  {
    name: 'an answer written slowly shows before the model has finished, and ends as one message with the whole text',
    needs: ['live'],
    async run({ harness }) {
      const chat = { chat: 'slow' };
      await harness.userSays('slowly please', chat);
      // Seen while the model is still writing: its first sentence without its last.
      const early = await waitFor(
        async () => {
          const seen = await shownOrPartial(harness, chat);
          return seen.includes('Sentence 1 ') && !seen.includes('Sentence 12 ') && seen;
        },
        TURN_MS,
        'the answer before it was finished',
      );
      expect(SLOW_REPLY.startsWith(early.trim().slice(0, 20))).toBe(true);
      const replies = await waitFor(
        async () => {
          const shown = await harness.replies(chat);
          return shown.some((r) => r.includes('Sentence 12 of a slow answer.')) && shown;
        },
        TURN_MS,
        'the whole answer',
      );
      expect(replies).toEqual([SLOW_REPLY]);
      if (harness.edits) expect(await harness.edits(chat)).toBeGreaterThanOrEqual(1);
    },
  },
  {
    name: 'an answer written slowly arrives once, as one message with the whole text',
    lacks: ['live'],
    async run({ harness }) {
      const chat = { chat: 'slow' };
      await harness.userSays('slowly please', chat);
      const replies = await harness.waitForReplies(1, chat, TURN_MS);
      expect(replies).toEqual([SLOW_REPLY]);
      // A marker turn in the same chat: once it is answered, the slow one has nothing left to send.
      await harness.userSays('marker', chat);
      const after = await harness.waitForReplies(2, chat, TURN_MS);
      expect(after).toEqual([SLOW_REPLY, expect.stringContaining('marker')]);
    },
  },
  {
    name: 'a quick short answer is one message, never edited',
    needs: ['edits'],
    async run({ harness }) {
      const chat = { chat: 'quick' };
      await harness.userSays('quick one', chat);
      await harness.waitForReplies(1, chat, TURN_MS);
      // A marker turn in the same chat: once it is answered, the first has nothing left to do.
      await harness.userSays('marker', chat);
      const replies = await harness.waitForReplies(2, chat, TURN_MS);
      expect(replies).toEqual([expect.stringContaining('quick one'), expect.stringContaining('marker')]);
      expect(await harness.edits!(chat)).toBe(0);
    },
  },
  {
    name: 'a message delivered twice is answered once',
    needs: ['redelivery'],
    async run({ harness, model, role }) {
      const chat = { chat: 'twice' };
      const mailbox = role().bus.mailbox(harness.sessionKey(chat));
      await harness.userSays('once hold:twice', { ...chat, twice: true });
      await model.held('twice');
      // The platform delivers in order: once a later message's turn runs, the adapter has
      // taken both deliveries (dropped the second, or queued it behind the held turn).
      await harness.userSays('meanwhile hold:twice-marker', { chat: 'twice-marker' });
      await model.held('twice-marker');
      model.release('twice');
      model.release('twice-marker');
      await harness.waitForReplies(1, chat, TURN_MS);
      // A second delivery that reached the bus is redone as a turn of its own; it is over once
      // the mailbox is empty again (entries leave only after their turn's reply was queued).
      await waitFor(async () => (await mailbox.length()) === 0, TURN_MS, 'the redone turn');
      await harness.userSays('next message', chat);
      const replies = await harness.waitForReplies(2, chat, TURN_MS);
      expect(replies).toEqual(['held twice done', expect.stringContaining('next message')]);
    },
  },
  {
    name: 'a risky command asks; the code typed in the chat allows it, and the turn runs it once and answers',
    async run({ harness }) {
      const chat = { chat: 'approve-typed' };
      const { code, before } = await ask(harness, chat, 'echo typed >> approve-typed.txt');
      await harness.userSays(`/approve ${code}`, chat);
      const replies = (await harness.waitForReplies(before + 3, chat, TURN_MS)).slice(before);
      expect(replies[1]).toMatch(/^Allowed by .+: going on\.$/);
      expect(replies[2]).toMatch(/^done: \(no output\)/);
    },
  },
  {
    name: 'a typed /deny refuses it: the model is told, nothing runs',
    async run({ harness }) {
      const chat = { chat: 'deny-typed' };
      const { code, before } = await ask(harness, chat, 'echo denied >> deny-typed.txt');
      await harness.userSays(`/deny ${code}`, chat);
      const replies = (await harness.waitForReplies(before + 3, chat, TURN_MS)).slice(before);
      expect(replies[1]).toMatch(/^Denied by .+: magpie will not run/);
      expect(replies[2]).toContain('did not approve');
    },
  },
  {
    name: 'the question shows Allow once, Always allow and Deny; a press answers it as the presser and takes the buttons away (or, where they stay, a second press is told it no longer waits)',
    needs: ['buttons'],
    async run({ harness }) {
      const chat = { chat: 'buttons' };
      const { before } = await ask(harness, chat, 'echo pressed >> buttons.txt');
      expect(await harness.buttons!(chat)).toEqual([QUESTION_BUTTONS]);
      await harness.pressButton!('Deny', chat);
      const replies = (await harness.waitForReplies(before + 3, chat, TURN_MS)).slice(before);
      expect(replies[1]).toMatch(/^Denied by /);
      expect(replies[2]).toContain('did not approve');
      if (!harness.capabilities.buttonsStay) {
        // Taken off with the press's answer.
        expect(await harness.buttons!(chat)).toEqual([]);
      } else {
        // A platform that cannot change a sent message (WhatsApp) leaves them: pressed again, the
        // chat is told the question no longer waits, and nothing runs.
        await harness.pressButton!('Allow once', chat);
        const again = (await harness.waitForReplies(before + 4, chat, TURN_MS)).slice(before);
        expect(again[3]).toMatch(/^No question [A-Z2-9]{5} is waiting|was already answered/);
      }
    },
  },
  {
    name: "in a group, a stranger's press changes nothing and leaves the buttons; the asker's press allows it",
    needs: ['buttons', 'groups', 'pairing'],
    async run(run) {
      const { harness } = run;
      const group = { group: true, chat: 'buttons-guarded' };
      const { code, before } = await ask(harness, group, 'echo grouped >> buttons-guarded.txt');
      const inboundBefore = run.inbound.length;
      // Resolves once the platform has the press answered: the adapter has decided about it.
      await harness.pressButton!('Allow once', group, { by: 'stranger' });
      expect(run.inbound.slice(inboundBefore)).toEqual([]);
      expect(await harness.buttons!(group)).toContainEqual(QUESTION_BUTTONS);
      const pending = await run.role().bus.approvals.get(harness.sessionKey(group));
      expect(pending).toMatchObject({ code, state: 'waiting' });
      await harness.pressButton!('Allow once', group);
      const replies = (
        await harness.waitForReplies(before + 3, group, TURN_MS).catch(async (err: unknown) => {
          throw new Error(`${String(err)}: ${JSON.stringify(await harness.replies(group))}`);
        })
      ).slice(before);
      expect(replies[1]).toMatch(/^Allowed by /);
      expect(replies[2]).toMatch(/^done:/);
    },
  },
  {
    name: 'the same press delivered twice is taken once: the command runs once, one answer',
    needs: ['buttons'],
    async run({ harness }) {
      const chat = { chat: 'buttons-twice' };
      const { code, before } = await ask(harness, chat, 'echo twice >> buttons-twice.txt');
      await harness.pressButton!('Allow once', chat, { twice: true });
      await harness.waitForReplies(before + 3, chat, TURN_MS);
      // Later in the same chat: a second take of the press would have been answered before this.
      await harness.userSays('marker after the press', chat);
      const replies = (await harness.waitForReplies(before + 4, chat, TURN_MS)).slice(before);
      expect(replies).toEqual([
        expect.stringContaining(code),
        expect.stringMatching(/^Allowed by /),
        expect.stringMatching(/^done:/),
        expect.stringContaining('marker after the press'),
      ]);
    },
  },
];

/**
 * Has the model ask to run `command` (a risky one) in the chat; resolves the question's code
 * and how many replies the chat showed before it, once the chat shows the question (and, where
 * the channel has them, its buttons).
 */
async function ask(
  harness: ChannelHarness,
  where: ChatRef,
  command: string,
): Promise<{ code: string; before: number }> {
  const before = (await harness.replies(where)).length;
  // In a group the bot is addressed the platform's way.
  await harness.userSays(`run: ${command}`, where.group ? { ...where, mention: true } : where);
  const question = (
    await harness.waitForReplies(before + 1, where, TURN_MS).catch(async (err: unknown) => {
      throw new Error(`${String(err)}; the chat shows ${JSON.stringify(await harness.replies(where))}`);
    })
  )[before];
  expect(question).toContain('magpie wants to run');
  const code = /\/approve ([A-Z2-9]{5})/.exec(question ?? '')?.[1];
  if (!code) throw new Error(`no code in the question: ${question}`);
  if (harness.buttons) {
    await waitFor(
      async () => (await harness.buttons!(where)).some((row) => row.join() === QUESTION_BUTTONS.join()),
      TURN_MS,
      'the question with its buttons',
    );
  }
  return { code, before };
}

/** A Redis of a contract run's own (a Cluster): the variables that name it, and its stop. */
export interface ContractRedis {
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** What a contract run on a Redis of its own checks after every case ran (a test of its own, last). */
export interface ContractAftermath {
  name: string;
  check(run: ContractRun): Promise<void>;
}

/**
 * Declares the contract for one channel: `describeChannelContract('telegram', telegramHarness)`.
 * Starts the stack once for all cases (each case uses chats of its own), on the run's
 * redis-server, or on the Redis `options.redis` starts (`startRedisCluster`).
 */
export function describeChannelContract(
  name: string,
  makeHarness: HarnessFactory,
  options: { redis?: () => Promise<ContractRedis>; afterCases?: ContractAftermath } = {},
): void {
  describe(`${name}: the Channel contract`, () => {
    let run: ContractRun | undefined;
    let own: ContractRedis | undefined;
    const current = (): ContractRun => {
      if (!run) throw new TypeError('the contract run did not start');
      return run;
    };

    beforeAll(async () => {
      own = await options.redis?.();
      run = await startContractRun(own?.env ?? inject('redisUrl'), makeHarness);
    }, 60_000);

    afterAll(async () => {
      await run?.stop();
      await own?.stop();
    });

    for (const c of CASES.filter((c) => applies(c, makeHarness))) {
      it(c.name, () => c.run(current()), 60_000);
    }
    const after = options.afterCases;
    if (after) it(after.name, () => after.check(current()), 60_000);
  });
}

/** Whether a case applies to a channel with these traits. */
function applies(c: ContractCase, traits: ChannelTraits): boolean {
  if (!(c.needs ?? []).every((need) => traits.capabilities[need])) return false;
  if ((c.lacks ?? []).some((lack) => traits.capabilities[lack])) return false;
  return c.limit === undefined || c.limit === (traits.textLimit !== undefined);
}

/** What the user sees of the chat now, an answer still being written included. */
async function shownOrPartial(harness: ChannelHarness, where: ChatRef): Promise<string> {
  if (harness.partial) return harness.partial(where);
  return (await harness.replies(where)).join('\n');
}

/** The fence lines of a message (```, ```js), in order. */
function fenceLines(text: string): string[] {
  return text.split('\n').filter((line) => line.startsWith('```'));
}

/** The lines of {@link CODE} found in the parts, in order. */
function codeLines(parts: string[]): string[] {
  return parts
    .join('\n')
    .split('\n')
    .filter((line) => line.startsWith('let value'));
}
