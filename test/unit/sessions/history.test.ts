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

  it('is prefix-stable: what it keeps of a log ending at a turn boundary never changes as the log grows', () => {
    // Requests of a session must begin with the previous request's bytes, so sanitising may not rewrite
    // the past: checked over many seeded random logs with orphans, duplicates and crashed calls.
    let seed = 13;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const ids = ['a', 'b', 'c'];
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
    for (let run = 0; run < 300; run += 1) {
      const log: SessionEntry[] = [];
      for (let i = 0; i < 24; i += 1) {
        const r = random();
        if (r < 0.3) log.push(user(`u${i}`));
        else if (r < 0.5) log.push(said(`s${i}`));
        else if (r < 0.7) log.push(calls(...ids.slice(0, 1 + Math.floor(random() * 3))));
        else log.push(result(pick(ids)));
      }
      log.forEach((entry, i) => {
        const boundary = entry.role === 'user' || (entry.role === 'assistant' && !entry.toolCalls?.length);
        if (!boundary) return;
        const before = sanitizeHistory(log.slice(0, i + 1));
        const after = sanitizeHistory(log);
        expect(after.slice(0, before.length), `run ${run}, cut after ${i}`).toEqual(before);
      });
    }
  });
});
