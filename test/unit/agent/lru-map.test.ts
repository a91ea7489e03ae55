import { describe, expect, it } from 'vitest';
import { LruMap } from '../../../src/agent/lru-map.js';

describe('LruMap', () => {
  it('keeps at most max entries, dropping the least recently used', () => {
    const map = new LruMap<string, number>(2);
    map.set('a', 1).set('b', 2);
    expect(map.get('a')).toBe(1); // a is now newer than b
    map.set('c', 3);
    expect(map.size).toBe(2);
    expect(map.get('b')).toBeUndefined();
    expect(map.get('a')).toBe(1);
    expect(map.get('c')).toBe(3);
  });

  it('rejects a cap below one', () => {
    expect(() => new LruMap(0)).toThrow(RangeError);
  });
});
