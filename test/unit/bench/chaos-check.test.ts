/** The chaos run's verdict (bench/chaos-check.ts): each kind of failure is counted, a clean run counts none. */
import { describe, expect, it } from 'vitest';
import {
  answeredNumbers,
  type ChaosEvidence,
  chaosAnswer,
  chaosFailures,
  chaosMessage,
  judgeChaos,
  type ReceivedReply,
} from '../../../bench/chaos-check.js';

const reply = (id: string, address: string, numbers: number[], seq: number): ReceivedReply => ({
  chat: 'c01',
  id,
  address,
  content: chaosAnswer(numbers.map((n) => chaosMessage('c01', n))),
  seq,
});
const session = (...numbers: number[]) => [
  ...numbers.map((n) => JSON.stringify({ role: 'user', content: chaosMessage('c01', n) })),
  '',
];
const evidence = (received: ReceivedReply[], lines = session(1, 2, 3)): ChaosEvidence => ({
  acknowledged: new Map([['c01', [1, 2, 3]]]),
  received,
  sessions: new Map([['c01', lines]]),
});

describe('judgeChaos', () => {
  it('the fake model names every message of its turn, and the verdict reads them back', () => {
    const answer = chaosAnswer([
      `${chaosMessage('c01', 4)}\n<context>\nnow\n</context>`,
      chaosMessage('c01', 5),
    ]);
    expect(answer).toBe('ack c01#4 c01#5');
    expect(answeredNumbers('c01', answer)).toEqual([4, 5]);
    expect(answeredNumbers('c02', answer)).toEqual([]);
  });

  it('a clean run: a turn of two messages answers both addresses once', () => {
    const v = judgeChaos(
      evidence([reply('r1', 'a1', [1], 0), reply('r2', 'a2', [2, 3], 1), reply('r2', 'a3', [2, 3], 1)]),
    );
    expect(v).toMatchObject({ messages: 3, answered: 3, lost: 0, duplicates: 0, sameIdRedeliveries: 0 });
    expect(v.deliveredOutOfOrder + v.invalidSessionLines + v.sessionOrderErrors).toBe(0);
  });

  it('counts a message no reply names as lost', () => {
    expect(judgeChaos(evidence([reply('r1', 'a1', [1], 0), reply('r2', 'a2', [2], 1)])).lost).toBe(1);
  });

  it('counts a message answered by two replies as a duplicate, and the same reply pushed twice apart', () => {
    const v = judgeChaos(
      evidence([
        reply('r1', 'a1', [1], 0),
        reply('r1', 'a1', [1], 0),
        reply('r2', 'a2', [2, 3], 1),
        reply('r3', 'a3', [3], 2),
      ]),
    );
    expect(v.duplicates).toBe(1);
    expect(v.sameIdRedeliveries).toBe(1);
  });

  it('counts a reply that arrived after a later one, a broken session line and a message stored twice', () => {
    const v = judgeChaos(
      evidence(
        [reply('r2', 'a2', [2, 3], 0), reply('r1', 'a1', [1], 1)],
        [...session(1, 2, 2, 3), '{"role":"us'],
      ),
    );
    expect(v.deliveredOutOfOrder).toBe(1);
    expect(v.invalidSessionLines).toBe(1);
    expect(v.sessionOrderErrors).toBe(1);
  });

  it('a run fails on a late reply or a session out of order as on a loss, and passes clean', () => {
    const clean = judgeChaos(evidence([reply('r1', 'a1', [1], 0), reply('r2', 'a2', [2, 3], 1)]));
    expect(chaosFailures(clean)).toEqual([]);
    const late = judgeChaos(evidence([reply('r2', 'a2', [2, 3], 0), reply('r1', 'a1', [1], 1)]));
    expect(chaosFailures(late)).toEqual(['deliveredOutOfOrder: 1']);
    const swapped = judgeChaos(
      evidence([reply('r1', 'a1', [1], 0), reply('r2', 'a2', [2, 3], 1)], session(1, 3, 2)),
    );
    expect(chaosFailures(swapped)).toEqual(['sessionOrderErrors: 1']);
    const lost = judgeChaos(evidence([reply('r1', 'a1', [1], 0)]));
    expect(chaosFailures(lost)).toEqual(['lost: 2']);
  });

  it('judges the order of the replies whose send was observed, and counts the others', () => {
    const v = judgeChaos(
      evidence([reply('r2', 'a2', [2, 3], 0), { ...reply('r1', 'a1', [1], 0), seq: undefined }]),
    );
    expect(v.deliveredOutOfOrder).toBe(0);
    expect(v.unobservedReplies).toBe(1);
    expect(v.lost).toBe(0);
  });
});
