/** SendProgress on LruMap: resume after sent parts, forget finished messages, keep only the latest ones. */
import { describe, expect, it } from 'vitest';
import { LruMap } from '../../../src/channels/lru-map.js';
import { pairingText } from '../../../src/channels/pairing-text.js';
import { SendProgress } from '../../../src/channels/send-progress.js';

describe('SendProgress', () => {
  it('remembers the parts sent until the message is finished', () => {
    const progress = new SendProgress();
    expect(progress.sent('m1')).toBe(0);
    progress.record('m1', 1);
    progress.record('m1', 2);
    expect(progress.sent('m1')).toBe(2);
    progress.finish('m1');
    expect(progress.sent('m1')).toBe(0);
  });

  it('keeps only the most recently used messages', () => {
    const progress = new SendProgress(2);
    progress.record('a', 1);
    progress.record('b', 1);
    expect(progress.sent('a')).toBe(1); // read: a is now newer than b
    progress.record('c', 1);
    expect(progress.sent('b')).toBe(0);
    expect(progress.sent('a')).toBe(1);
    expect(progress.sent('c')).toBe(1);
  });
});

describe('LruMap', () => {
  it('drops the least recently used key past its cap and refuses a cap below 1', () => {
    const map = new LruMap<string, number>(2);
    map.set('x', 1).set('y', 2);
    map.get('x');
    map.set('z', 3);
    expect(map.get('y')).toBeUndefined();
    expect(map.size).toBe(2);
    expect(map.delete('x')).toBe(true);
    expect(() => new LruMap(0)).toThrow(RangeError);
    expect(() => new LruMap(1.5)).toThrow(RangeError);
  });
});

describe('pairingText', () => {
  it('names the command that admits the sender, with the code', () => {
    expect(pairingText('ABC123')).toBe(
      "Hi! I don't know you yet. Ask my owner to run: npx magpie pairing approve ABC123",
    );
  });
});
