import { describe, expect, it } from 'vitest';
import { hasCode } from '../../../src/errors/index.js';
import { sessionFileName, sessionKeyFromFileName } from '../../../src/sessions/session-key.js';

describe('sessionFileName', () => {
  it('keeps simple keys readable, with ":" as "_"', () => {
    expect(sessionFileName('cli:default')).toBe('cli_default');
    expect(sessionFileName('telegram:-100123')).toBe('telegram_-100123');
  });

  it('escapes slashes, dots, underscores and other characters so the name is file-safe', () => {
    const name = sessionFileName('telegram:-100/42');
    expect(name).toBe('telegram_-100%2F42');
    for (const key of ['a:../../etc/passwd', 'x:\\windows', 'd:..', 'e:ü 🐦']) {
      const out = sessionFileName(key);
      expect(out).not.toMatch(/[/\\.]/);
    }
  });

  it('is collision-free: distinct keys give distinct names, and names decode back', () => {
    const keys = ['a:b', 'a_b', 'a%3Ab', 'a.b', 'a%2Eb', 'a/b', 'A:b', 'cli:ü', 'x:y:z', 'x:y_z', '-'];
    const names = keys.map(sessionFileName);
    expect(new Set(names).size).toBe(keys.length);
    for (const key of keys) expect(sessionKeyFromFileName(sessionFileName(key))).toBe(key);
  });

  it.each(['', '.', '..'])('rejects %j with INVALID_SESSION_KEY', (key) => {
    let caught: unknown;
    try {
      sessionFileName(key);
    } catch (err) {
      caught = err;
    }
    expect(hasCode(caught, 'INVALID_SESSION_KEY')).toBe(true);
  });

  it('rejects keys whose file name would be too long', () => {
    expect(() => sessionFileName(`cli:${'é'.repeat(100)}`)).toThrow(/too long/);
  });

  it('does not decode names it could not have produced', () => {
    expect(sessionKeyFromFileName('cli_default.20261122T000000Z')).toBeUndefined();
    expect(sessionKeyFromFileName('bad%ZZ')).toBeUndefined();
    expect(sessionKeyFromFileName('bad%FF')).toBeUndefined();
  });
});
