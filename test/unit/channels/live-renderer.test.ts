/**
 * The live renderer against a surface that keeps a chat in memory (the
 * platform surfaces themselves are tested against the Telegram and Discord
 * fakes): pace, parts, the final edit, redone turns, refused edits.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { displayText, LiveRenderer } from '../../../src/channels/live/renderer.js';
import { type LiveSurface, type LiveTarget, MemoryLiveRecords } from '../../../src/channels/live/surface.js';
import { AppError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/log/index.js';
import type { LiveUpdate } from '../../../src/messages/live-update.js';
import { type OutboundAction, OutboundMessageSchema } from '../../../src/messages/messages.js';

/** A chat that shows messages by id; counts what was done to it. */
class MemoryChat implements LiveSurface<string> {
  readonly limit = 20;
  readonly editIntervalMs = 1000;
  readonly messages = new Map<string, string>();
  /** The labels of the buttons each message shows. */
  readonly buttons = new Map<string, string[]>();
  readonly calls: string[] = [];
  /** Errors the next edits throw (first in, first out). */
  readonly editFailures: AppError[] = [];
  #next = 1;

  async post(_target: LiveTarget, text: string): Promise<string> {
    const id = String(this.#next++);
    this.messages.set(id, text);
    this.calls.push(`post ${id}`);
    return id;
  }
  async edit(_target: LiveTarget, id: string, text: string): Promise<void> {
    const failure = this.editFailures.shift();
    if (failure) throw failure;
    if (!this.messages.has(id)) throw new AppError('DELIVERY_PERMANENT', 'message to edit not found');
    this.messages.set(id, text);
    this.calls.push(`edit ${id}`);
  }
  finalParts(content: string): string[] {
    const parts: string[] = [];
    for (let i = 0; i < content.length; i += this.limit) parts.push(`<${content.slice(i, i + this.limit)}>`);
    return parts;
  }
  async editFinal(
    target: LiveTarget,
    id: string,
    part: string,
    actions?: readonly OutboundAction[],
  ): Promise<void> {
    await this.edit(target, id, part);
    this.setButtons(id, actions);
  }
  async postFinal(
    target: LiveTarget,
    part: string,
    _key: string,
    actions?: readonly OutboundAction[],
  ): Promise<string> {
    const id = await this.post(target, part);
    this.setButtons(id, actions);
    return id;
  }
  private setButtons(id: string, actions: readonly OutboundAction[] | undefined): void {
    if (actions)
      this.buttons.set(
        id,
        actions.map((a) => a.label),
      );
    else this.buttons.delete(id);
  }
  async remove(_target: LiveTarget, id: string): Promise<void> {
    this.messages.delete(id);
    this.calls.push(`remove ${id}`);
  }
  shown(): string[] {
    return [...this.messages.values()];
  }
}

const snapshot = (text: string, seq: number, extra: Partial<LiveUpdate> = {}): LiveUpdate => ({
  turn: 't1',
  channel: 'test',
  chatId: 'c1',
  text,
  seq,
  metadata: {},
  ...extra,
});
const finalReply = (content: string, live = 't1') =>
  OutboundMessageSchema.parse({ id: `r-${live}`, channel: 'test', chatId: 'c1', content, live });

let chat: MemoryChat;
let records: MemoryLiveRecords;
let renderer: LiveRenderer<string>;

beforeEach(() => {
  vi.useFakeTimers();
  chat = new MemoryChat();
  records = new MemoryLiveRecords();
  renderer = new LiveRenderer({ channel: 'test', surface: chat, records, logger: silentLogger() });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Completes the preview, letting the renderer wait out the surface's pace. */
async function finish(content: string, renderer_ = renderer): Promise<boolean> {
  const done = renderer_.finish(finalReply(content));
  await vi.advanceTimersByTimeAsync(1000);
  return done;
}

/** Runs due timers and the work they queue. */
async function settle(ms = 0): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
  await renderer.idle('t1');
}

describe('LiveRenderer', () => {
  it('posts the first snapshot at once and edits at most once per interval, showing the newest', async () => {
    renderer.update(snapshot('Hello', 0));
    await settle();
    expect(chat.shown()).toEqual(['Hello']);
    renderer.update(snapshot('Hello wo', 1));
    renderer.update(snapshot('Hello world', 2));
    await settle(500);
    expect(chat.calls).toEqual(['post 1']);
    await settle(500);
    expect(chat.calls).toEqual(['post 1', 'edit 1']);
    expect(chat.shown()).toEqual(['Hello world']);
  });

  it('continues past the limit in a new message', async () => {
    renderer.update(snapshot('one two three four five six', 0));
    await settle();
    expect(chat.shown()).toEqual(['one two three four', 'five six']);
  });

  it('turns the preview into the final parts in place, deleting preview parts no longer needed', async () => {
    renderer.update(snapshot('a long answer that needs parts', 0));
    await settle();
    expect(chat.messages.size).toBe(2);
    expect(await finish('short')).toBe(true);
    expect(chat.shown()).toEqual(['<short>']);
    expect(chat.calls.filter((c) => c.startsWith('post'))).toHaveLength(2);
  });

  it("puts the reply's buttons under its last final part, edited in or posted", async () => {
    const actions = [
      { label: 'Allow once', command: '/approve K7QF2' },
      { label: 'Deny', command: '/deny K7QF2' },
    ];
    renderer.update(snapshot('a draft', 0));
    await settle();
    const done = renderer.finish({ ...finalReply('a final answer of more than one part'), actions });
    await vi.advanceTimersByTimeAsync(1000);
    expect(await done).toBe(true);
    expect(chat.shown()).toHaveLength(2);
    expect([...chat.buttons]).toEqual([['2', ['Allow once', 'Deny']]]);
    // The preview's message was edited into the first part, which carries none.
    expect(chat.calls).toEqual(['post 1', 'edit 1', 'post 2']);
  });

  it('returns false (the channel sends) when nothing was shown, and ignores snapshots after the final reply', async () => {
    expect(await finish('quick')).toBe(false);
    renderer.update(snapshot('late', 5));
    await settle(5000);
    expect(chat.calls).toEqual([]);
  });

  it('ignores a snapshot that arrives after the final reply was shown', async () => {
    renderer.update(snapshot('draft', 0));
    await settle();
    await finish('final');
    renderer.update(snapshot('draft plus', 1));
    await settle(5000);
    expect(chat.shown()).toEqual(['<final>']);
  });

  it('does nothing when the same final reply comes again (a retried delivery)', async () => {
    renderer.update(snapshot('draft', 0));
    await settle();
    await finish('final');
    const calls = chat.calls.length;
    expect(await finish('final')).toBe(true);
    expect(chat.calls).toHaveLength(calls);
  });

  it('lets a redone turn continue the preview it started, through the records (another gateway)', async () => {
    renderer.update(snapshot('first attempt', 0));
    await settle();
    const other = new LiveRenderer({ channel: 'test', surface: chat, records, logger: silentLogger() });
    other.update(snapshot('second', 0));
    await vi.advanceTimersByTimeAsync(0);
    await other.idle('t1');
    expect(chat.calls).toEqual(['post 1', 'edit 1']);
    expect(await finish('answer', other)).toBe(true);
    expect(chat.shown()).toEqual(['<answer>']);
  });

  it('posts the final reply once when the preview was deleted, and tidies nothing twice', async () => {
    renderer.update(snapshot('draft', 0));
    await settle();
    chat.messages.delete('1'); // the user deleted the preview
    expect(await finish('final')).toBe(true);
    expect(chat.shown()).toEqual(['<final>']);
    expect(chat.calls.filter((c) => c.startsWith('post'))).toHaveLength(2);
  });

  it('waits out a rate limit before the next edit, then shows the newest text', async () => {
    renderer.update(snapshot('a', 0));
    await settle();
    chat.editFailures.push(
      new AppError('DELIVERY_TRANSIENT', '429', { transient: true, retryAfterMs: 3000 }),
    );
    renderer.update(snapshot('ab', 1));
    await settle(1000);
    expect(chat.shown()).toEqual(['a']);
    renderer.update(snapshot('abc', 2));
    await settle(2000);
    expect(chat.shown()).toEqual(['a']);
    await settle(1000);
    expect(chat.shown()).toEqual(['abc']);
  });

  it('keeps the pace when a snapshot arrives while an edit is in flight', async () => {
    renderer.update(snapshot('a', 0));
    await settle();
    let release: () => void = () => {};
    const slowEdit = chat.edit.bind(chat);
    const editTimes: number[] = [];
    chat.edit = async (target, id, text) => {
      editTimes.push(Date.now());
      if (editTimes.length === 1) await new Promise<void>((resolve) => (release = resolve));
      await slowEdit(target, id, text);
    };
    renderer.update(snapshot('ab', 1));
    await vi.advanceTimersByTimeAsync(1000); // the first edit starts and hangs
    renderer.update(snapshot('abc', 2)); // scheduled at the old pace
    await vi.advanceTimersByTimeAsync(300);
    release(); // the first edit ends now: the next may not follow at once
    await vi.advanceTimersByTimeAsync(10);
    expect(editTimes).toHaveLength(1);
    await settle(1000);
    expect(editTimes).toHaveLength(2);
    expect(editTimes[1]! - editTimes[0]!).toBeGreaterThanOrEqual(1000);
    expect(chat.shown()).toEqual(['abc']);
  });

  it('stops previewing after an edit is refused for good; the final reply is posted', async () => {
    renderer.update(snapshot('a', 0));
    await settle();
    chat.editFailures.push(new AppError('DELIVERY_PERMANENT', 'message can not be edited'));
    renderer.update(snapshot('ab', 1));
    await settle(1000);
    renderer.update(snapshot('abc', 2));
    await settle(5000);
    expect(chat.calls).toEqual(['post 1']);
    await finish('done');
    expect(chat.shown()).toEqual(['<done>']);
  });
});

describe('displayText', () => {
  it('shows the progress line under the text, or alone', () => {
    expect(displayText({ text: 'Looking. ', progress: 'searching the web: x' })).toBe(
      'Looking.\n\n⏳ searching the web: x',
    );
    expect(displayText({ text: '', progress: 'reading a.md' })).toBe('⏳ reading a.md');
  });
});
