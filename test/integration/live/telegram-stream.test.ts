/**
 * Live replies on Telegram, end to end in one process: a fake model that
 * writes slowly → worker snapshots on the bus → gateway → edits on the fake
 * Bot API (which refuses edits faster than one per 900 ms, as Telegram does
 * with 429s). The final reply is the preview edited into its formatted form.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { silentLogger } from '../../../src/log/index.js';
import { roleConfig, telegramEnv } from '../../fakes/config.js';
import { type FakeOpenAI, lastUserText, startFakeOpenAI } from '../../fakes/openai-server.js';
import { stopRoleAndFakes } from '../../fakes/role.js';
import { dmUpdate, type FakeTelegram, startFakeTelegram } from '../../fakes/telegram-server.js';

const SLOW_TEXT = Array.from({ length: 20 }, (_, i) => `Sentence ${i + 1} of a **slow** answer.`).join(' ');
const CODE = Array.from({ length: 150 }, (_, i) => `const v${i} = ${i}; // line ${i}`).join('\n');
const LONG_TEXT = `${'Some words before the code. '.repeat(40)}\n\n\`\`\`ts\n${CODE}\n\`\`\`\n\nDone.`;

let fake: FakeTelegram;
let openai: FakeOpenAI;
let role: RunningRole | undefined;
let workspace: string;
const owner = { id: 7001, first_name: 'Owner', username: 'owner' };

beforeAll(async () => {
  fake = await startFakeTelegram({ token: '777:live-token', editIntervalMs: 900 });
  openai = await startFakeOpenAI({
    responder: (req) => {
      const text = lastUserText(req);
      if (text.includes('look around')) {
        // First a tool call; the answer after the tool's result comes slowly.
        const afterTool = req.body.messages.at(-1)?.role === 'tool';
        return afterTool
          ? { content: 'I looked: the workspace holds your notes.', delayMs: 1500 }
          : { content: 'Let me look.', toolCalls: [{ name: 'list_dir', arguments: '{"path":"."}' }] };
      }
      if (text.includes('slowly')) return { content: SLOW_TEXT, pieces: 12, pieceDelayMs: 250 };
      if (text.includes('long')) return { content: LONG_TEXT, pieces: 10, pieceDelayMs: 200 };
      return { content: `quick: ${text.slice(-20)}` };
    },
  });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'magpie-live-'));
  const config = roleConfig({ workspace, openai }, telegramEnv(fake, `@${owner.username}`));
  role = await startRole({ role: 'start', config, logger: silentLogger(), concurrency: 4 });
}, 60_000);

afterAll(() => stopRoleAndFakes(role, [fake, openai], workspace));

const editsIn = (chatId: number) => fake.edits.filter((e) => e.chat_id === String(chatId));
const shownText = (chatId: number) => fake.shown(chatId).join('\n');
/** Waits until the chat's last edit is the formatted (HTML) final one. */
const settled = (chatId: number) => () => editsIn(chatId).some((e) => e.parse_mode === 'HTML');

describe('live replies on Telegram', () => {
  it('shows a slow answer early, grows it by edits at Telegram’s pace, and ends with one formatted message', async () => {
    const chat = { ...owner, id: 7002 };
    fake.pushUpdate(dmUpdate(chat, 'answer slowly please'));
    await fake.waitFor(() => fake.sent(chat.id).length === 1, 20_000);
    const firstShownAt = Date.now();
    const firstText = fake.sent(chat.id)[0]!.text;
    expect(firstText.length).toBeGreaterThan(0);
    expect(SLOW_TEXT.replaceAll('**', '').length).toBeGreaterThan(firstText.replaceAll('**', '').length);
    expect(fake.sent(chat.id)[0]!.parse_mode).toBeUndefined(); // plain while it is written

    await fake.waitFor(settled(chat.id), 20_000);
    // Shown well before the model finished (12 pieces, 250 ms apart).
    const lastEditAt = Math.max(...editsIn(chat.id).map((e) => e.at));
    expect(lastEditAt - firstShownAt).toBeGreaterThan(1000);
    const edits = editsIn(chat.id);
    expect(edits.filter((e) => e.outcome === 'edited').length).toBeGreaterThanOrEqual(2);
    expect(
      edits.filter((e) => e.outcome === 'failed').map((e) => [e.parse_mode, e.error, e.at - firstShownAt]),
    ).toEqual([]); // never faster than Telegram allows
    expect(fake.sent(chat.id)).toHaveLength(1);
    const [final] = fake.shownMessages(chat.id);
    expect(fake.shownMessages(chat.id)).toHaveLength(1);
    expect(final!.parse_mode).toBe('HTML');
    expect(final!.text).toContain('<b>slow</b>');
    expect(final!.text).toContain('Sentence 20 of a');
  });

  it('sends a quick short answer as one message, with no edits', async () => {
    const chat = { ...owner, id: 7003 };
    fake.pushUpdate(dmUpdate(chat, 'hello'));
    await fake.waitFor(() => fake.sent(chat.id).length === 1, 20_000);
    // A marker turn in the same chat: once it is answered, the first turn has nothing left to do.
    fake.pushUpdate(dmUpdate(chat, 'marker'));
    await fake.waitFor(() => fake.sent(chat.id).length === 2, 20_000);
    expect(fake.sent(chat.id).map((m) => m.text)).toEqual(['quick: hello', 'quick: marker']);
    expect(editsIn(chat.id)).toEqual([]);
  });

  it('continues a long answer in a second message, code fences balanced, the code intact', async () => {
    const chat = { ...owner, id: 7004 };
    fake.pushUpdate(dmUpdate(chat, 'a long one'));
    await fake.waitFor(() => fake.sent(chat.id).length >= 1, 20_000);
    await fake.waitFor(
      () =>
        fake.shownMessages(chat.id).every((m) => m.parse_mode === 'HTML') &&
        shownText(chat.id).includes('Done.'),
      20_000,
    );
    const shown = fake.shownMessages(chat.id);
    expect(shown).toHaveLength(2);
    for (const message of shown) {
      expect(message.text.length).toBeLessThanOrEqual(4096);
      expect(message.text.split('<pre>').length).toBe(message.text.split('</pre>').length);
    }
    const code = shown
      .map((m) => m.text)
      .join('\n')
      .split('\n')
      .filter((line) => line.includes('// line'))
      .map((line) => line.replace(/<[^>]+>/g, ''));
    expect(code).toEqual(CODE.split('\n'));
  });

  it('shows what a tool is doing in the message being built, then replaces it with the answer', async () => {
    const chat = { ...owner, id: 7007 };
    fake.pushUpdate(dmUpdate(chat, 'please look around'));
    await fake.waitFor(() => fake.shown(chat.id).some((t) => t.includes('⏳ looking in .')), 20_000);
    // Settled once the final (formatted) edit is in, not when a preview edit already shows the words.
    await fake.waitFor(
      () => fake.shownMessages(chat.id).some((m) => m.parse_mode === 'HTML' && m.text.includes('I looked:')),
      20_000,
    );
    expect(fake.shown(chat.id)).toEqual(['I looked: the workspace holds your notes.']);
    expect(fake.sent(chat.id)).toHaveLength(1);
  });

  it('posts the reply once when Telegram refuses to edit the preview (deleted)', async () => {
    const chat = { ...owner, id: 7005 };
    fake.pushUpdate(dmUpdate(chat, 'answer slowly, I will delete it'));
    await fake.waitFor(() => fake.sent(chat.id).length === 1, 20_000);
    // The next edit of the preview is refused (as if the user deleted it): a preview edit or the
    // final edit, whichever comes first; the preview is not edited again after that.
    fake.failEdits(1, 'not_found');
    await fake.waitFor(() => fake.sent(chat.id).length === 2, 20_000);
    fake.pushUpdate(dmUpdate(chat, 'marker'));
    await fake.waitFor(() => fake.sent(chat.id).length === 3, 20_000);
    const sent = fake.sent(chat.id);
    expect(sent[1]!.parse_mode).toBe('HTML');
    expect(sent[1]!.text).toContain('Sentence 20 of a');
    expect(sent[2]!.text).toBe('quick: marker');
  });

  it('keeps what was written when the user stops a streaming answer, ending with "Stopped."', async () => {
    const chat = { ...owner, id: 7006 };
    fake.pushUpdate(dmUpdate(chat, 'answer slowly then I stop you'));
    await fake.waitFor(() => fake.sent(chat.id).length === 1, 20_000);
    fake.pushUpdate(dmUpdate(chat, '/stop'));
    await fake.waitFor(() => fake.shown(chat.id).some((t) => t.endsWith('Stopped.')), 20_000);
    const shown = fake.shown(chat.id);
    const stopped = shown.find((t) => t.endsWith('Stopped.'))!;
    expect(stopped).toMatch(/^Sentence 1 of a/);
    expect(stopped).not.toContain('Sentence 20 of a');
    // The preview became the stopped answer: no second message for it (the stop notice is the channel's own).
    expect(
      fake.sent(chat.id).filter((m) => m.text.includes('Sentence 1 of a')),
      JSON.stringify({ sent: fake.sent(chat.id), edits: editsIn(chat.id) }),
    ).toHaveLength(1);
  });
});

describe('TELEGRAM_STREAM=off', () => {
  it('sends a slow answer whole, as one message, with no preview and no edit', async () => {
    const telegram = await startFakeTelegram({ token: '778:off-token' });
    const model = await startFakeOpenAI({
      responder: () => ({ content: SLOW_TEXT, pieces: 12, pieceDelayMs: 150 }),
    });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-live-off-'));
    const off = await startRole({
      role: 'start',
      config: roleConfig(
        { workspace: dir, openai: model },
        {
          ...telegramEnv(telegram, `@${owner.username}`),
          TELEGRAM_STREAM: 'off',
        },
      ),
      logger: silentLogger(),
    });
    try {
      const chat = { ...owner, id: 7101 };
      telegram.pushUpdate(dmUpdate(chat, 'answer slowly'));
      await telegram.waitFor(() => telegram.sent(chat.id).length === 1, 20_000);
      expect(telegram.sent(chat.id)[0]!.text).toContain('Sentence 20 of a');
      expect(telegram.sent(chat.id)[0]!.parse_mode).toBe('HTML');
      expect(telegram.edits).toEqual([]);
    } finally {
      await off.stop();
      await telegram.close();
      await model.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
