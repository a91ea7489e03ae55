/**
 * Web chat ids: letters, digits, `_` and `-`, 1 to 64 of them; anything that
 * could leave a session key, a Redis key or a file name (separators, dots,
 * spaces, other scripts, control characters, non-strings) is refused.
 */
import { describe, expect, it } from 'vitest';
import { isChatId, webSessionKey } from '../../../../src/channels/web/chat-id.js';

describe('web chat ids', () => {
  it('accepts letters, digits, _ and - up to 64 characters', () => {
    for (const id of ['a', 'work', 'Chat_2-b', '0', crypto.randomUUID(), 'x'.repeat(64)]) {
      expect(isChatId(id), id).toBe(true);
    }
  });

  it('refuses the empty, the too long, path and key separators, dots, spaces and other scripts', () => {
    for (const id of [
      '',
      'x'.repeat(65),
      '../etc',
      'a/b',
      'a\\b',
      'a:b',
      'web:x',
      'a.b',
      '..',
      'a b',
      ' a',
      'a\n',
      'a\u0000',
      'ä',
      'чат',
      'a*',
      '%2e%2e',
      '<script>',
    ]) {
      expect(isChatId(id), JSON.stringify(id)).toBe(false);
    }
  });

  it('refuses what is not a string (query arrays, numbers, objects)', () => {
    for (const id of [undefined, null, 42, ['a'], { id: 'a' }]) expect(isChatId(id)).toBe(false);
  });

  it('keeps a chat under the session web:<chat>', () => {
    expect(webSessionKey('work')).toBe('web:work');
  });
});
