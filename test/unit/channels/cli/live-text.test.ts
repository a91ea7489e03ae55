/**
 * The terminal's printing rule for a streaming answer (live-text.ts): new
 * suffixes only, a fresh line for a new iteration, the final remainder, and
 * output that always ends with exactly the reply.
 */
import { describe, expect, it } from 'vitest';
import {
  EMPTY_LIVE_TEXT,
  endLine,
  finalStep,
  type LiveText,
  liveStep,
  messageStep,
} from '../../../../src/channels/cli/live-text.js';

/** Runs snapshots then the final reply; returns everything printed. */
function play(snapshots: string[], reply: string, prefix = ''): string {
  let state: LiveText = EMPTY_LIVE_TEXT;
  let out = '';
  for (const text of snapshots) {
    const step = liveStep(state, text, prefix);
    out += step.output;
    state = step.state;
  }
  return out + finalStep(state, reply, prefix);
}

describe('liveStep', () => {
  it('prints a first snapshot whole, then only what each later one adds', () => {
    const a = liveStep(EMPTY_LIVE_TEXT, 'Hel');
    expect(a.output).toBe('Hel');
    const b = liveStep(a.state, 'Hello, wor');
    expect(b.output).toBe('lo, wor');
    const c = liveStep(b.state, 'Hello, world');
    expect(c.output).toBe('ld');
    expect(c.state).toEqual({ block: 'Hello, world', midLine: true });
  });

  it('prints nothing for an empty snapshot, a repeat, or one the screen already holds', () => {
    const shown = liveStep(EMPTY_LIVE_TEXT, 'Hello, world').state;
    expect(liveStep(EMPTY_LIVE_TEXT, '').output).toBe('');
    expect(liveStep(shown, '').output).toBe('');
    expect(liveStep(shown, 'Hello, world').output).toBe('');
    // A turn redone after a crash starts over with the same words: nothing until it says more.
    const redone = liveStep(shown, 'Hello');
    expect(redone.output).toBe('');
    expect(liveStep(redone.state, 'Hello, world!').output).toBe('!');
  });

  it('starts a fresh line, in full, for a snapshot that does not extend the screen (a new iteration)', () => {
    const first = liveStep(EMPTY_LIVE_TEXT, 'Let me look that up.');
    const next = liveStep(first.state, 'It is sunny');
    expect(next.output).toBe('\nIt is sunny');
    expect(liveStep(next.state, 'It is sunny today').output).toBe(' today');
  });

  it('needs no extra newline when the screen already ends a line', () => {
    const first = liveStep(EMPTY_LIVE_TEXT, 'Step one done.\n');
    expect(first.state.midLine).toBe(false);
    expect(liveStep(first.state, 'Now step two').output).toBe('Now step two');
  });

  it('puts the prefix at the start of every block, never before a suffix', () => {
    const a = liveStep(EMPTY_LIVE_TEXT, 'Hi', 'magpie> ');
    expect(a.output).toBe('magpie> Hi');
    const b = liveStep(a.state, 'Hi there', 'magpie> ');
    expect(b.output).toBe(' there');
    expect(liveStep(b.state, 'Done', 'magpie> ').output).toBe('\nmagpie> Done');
  });
});

describe('finalStep', () => {
  it('with nothing streamed prints the reply and a newline, as before streaming', () => {
    expect(finalStep(EMPTY_LIVE_TEXT, 'the answer')).toBe('the answer\n');
    expect(finalStep(EMPTY_LIVE_TEXT, 'the answer', 'magpie> ')).toBe('magpie> the answer\n');
    expect(finalStep(EMPTY_LIVE_TEXT, '')).toBe('\n');
  });

  it('prints only the remainder when the reply extends what streamed', () => {
    expect(play(['The ans', 'The answer is'], 'The answer is 42.')).toBe('The answer is 42.\n');
    const state = liveStep(EMPTY_LIVE_TEXT, 'The answer is').state;
    expect(finalStep(state, 'The answer is 42.')).toBe(' 42.\n');
    expect(finalStep(state, 'The answer is')).toBe('\n');
  });

  it('prints a fresh line and the whole reply when it does not extend what streamed', () => {
    expect(play(['Let me check.'], 'Sunny, 21°C.')).toBe('Let me check.\nSunny, 21°C.\n');
    // The reply is shorter than what the screen shows (a prefix of it): still printed whole.
    expect(play(['OK, checking now.'], 'OK')).toBe('OK, checking now.\nOK\n');
  });

  it('always ends with exactly the reply, whatever streamed before', () => {
    const cases: Array<[string[], string]> = [
      [[], 'plain'],
      [['a', 'ab', 'abc'], 'abcd'],
      [['first iteration', 'second'], 'second iteration'],
      [['x\n', 'x\ny'], 'x\nyz\n'],
      [['long text'], 'long'],
      [['same'], 'same'],
    ];
    for (const [snapshots, reply] of cases) {
      for (const prefix of ['', 'magpie> ']) {
        const out = play(snapshots, reply, prefix);
        expect(out.endsWith(`${reply}\n`), JSON.stringify({ snapshots, reply, out })).toBe(true);
        // Snapshots that are prefixes of the reply print exactly what a whole reply would.
        if (snapshots.every((s) => reply.startsWith(s))) expect(out).toBe(`${prefix}${reply}\n`);
      }
    }
  });
});

describe('messageStep and endLine', () => {
  it('prints a mid-turn message on a line of its own and keeps the block on screen', () => {
    const shown = liveStep(EMPTY_LIVE_TEXT, 'Working on it').state;
    const message = messageStep(shown, 'Reminder set', 'magpie> ');
    expect(message.output).toBe('\nmagpie> Reminder set\n');
    expect(message.state).toEqual({ block: 'Working on it', midLine: false });
    // A late snapshot of the same block prints nothing.
    expect(liveStep(message.state, 'Working on it').output).toBe('');
    expect(messageStep(EMPTY_LIVE_TEXT, 'hi').output).toBe('hi\n');
  });

  it('ends a line only when one is open', () => {
    const shown = liveStep(EMPTY_LIVE_TEXT, 'partial').state;
    expect(endLine(shown).output).toBe('\n');
    expect(endLine(endLine(shown).state).output).toBe('');
    expect(endLine(EMPTY_LIVE_TEXT).output).toBe('');
  });
});
