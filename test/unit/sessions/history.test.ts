import { describe, expect, it } from 'vitest';
import { sanitizeHistory } from '../../../src/sessions/history.js';
import type { SessionEntry } from '../../../src/sessions/types.js';

const user = (content: string): SessionEntry => ({ role: 'user', content });
const said = (content: string): SessionEntry => ({ role: 'assistant', content });
const calls = (...ids: string[]): SessionEntry => ({
  role: 'assistant',
  content: null,
  toolCalls: ids.map((id) => ({ id, name: 'read_file', arguments: '{}' })),
});
const result = (id: string): SessionEntry => ({ role: 'tool', toolCallId: id, content: `result ${id}` });

describe('sanitizeHistory', () => {
  it('drops leading orphan tool messages', () => {
    const out = sanitizeHistory([result('a'), result('b'), user('hi'), said('hello')]);
    expect(out).toEqual([user('hi'), said('hello')]);
  });

  it('keeps a call together with all of its results (parallel calls too)', () => {
    const history = [user('q'), calls('a', 'b'), result('a'), result('b'), said('done')];
    expect(sanitizeHistory(history)).toEqual(history);
  });

  it('drops an assistant call whose results are missing, with its partial results', () => {
    const history = [user('q'), calls('a', 'b'), result('a'), user('again'), said('ok')];
    expect(sanitizeHistory(history)).toEqual([user('q'), user('again'), said('ok')]);
  });

  it('drops a trailing call with no results at all (crash mid-turn)', () => {
    expect(sanitizeHistory([user('q'), calls('a')])).toEqual([user('q')]);
  });

  it('drops tool messages that answer no call of the assistant message before them', () => {
    const history = [user('q'), calls('a'), result('a'), result('zzz'), result('a'), said('x')];
    expect(sanitizeHistory(history)).toEqual([user('q'), calls('a'), result('a'), said('x')]);
  });

  it('drops tool messages separated from their call by another message', () => {
    const history = [user('q'), calls('a'), user('interrupt'), result('a')];
    expect(sanitizeHistory(history)).toEqual([user('q'), user('interrupt')]);
  });

  it('does not change its input', () => {
    const history = [result('x'), user('q')];
    sanitizeHistory(history);
    expect(history).toHaveLength(2);
  });
});
