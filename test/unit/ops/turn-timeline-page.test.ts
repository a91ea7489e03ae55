/** The turn timeline page: steps in time order as bars placed by time, every value escaped, old records tolerated. */
import { describe, expect, it } from 'vitest';
import type { StoredTurn } from '../../../src/bus/turn-records.js';
import { turnTimelinePage } from '../../../src/ops/turn-timeline-page.js';

const HOSTILE = '<img src=x onerror="alert(1)">';

function turn(overrides: Partial<StoredTurn> = {}): StoredTurn {
  const startedAt = 1_000_000;
  return {
    id: '1-0',
    turn: 'abc123',
    session: 'web:one',
    worker: 'worker-1',
    at: startedAt + 1_000,
    wallMs: 1_000,
    llmCalls: 2,
    promptTokens: 30,
    cachedTokens: 10,
    cacheWriteTokens: 0,
    completionTokens: 5,
    toolCalls: [{ name: 'exec', ms: 200, ok: false }],
    outcome: 'ok',
    fallbacks: 1,
    models: {},
    timeline: {
      receivedAt: startedAt - 1_000,
      startedAt,
      steps: [
        {
          kind: 'model',
          name: 'gpt-main',
          at: 0,
          ms: 400,
          ok: true,
          tokens: { input: 20, cached: 10, output: 2 },
        },
        { kind: 'tool', name: 'exec', at: 400, ms: 200, ok: false },
        { kind: 'model', name: 'gpt-backup', at: 600, ms: 400, ok: true, fallback: true },
      ],
    },
    ...overrides,
  };
}

/** Each row's label and its bar's left and width (percent). */
function rows(html: string): Array<{ label: string; left: number; width: number; step: string }> {
  return [
    ...html.matchAll(
      /<div class="what"[^>]*>([^<]*)<\/div><div class="lane"><div class="bar [^"]*" style="left:([\d.]+)%;width:([\d.]+)%" data-step="([^"]*)">/g,
    ),
  ].map((m) => ({ label: m[1] as string, left: Number(m[2]), width: Number(m[3]), step: m[4] as string }));
}

describe('turnTimelinePage', () => {
  it('lays the steps out by time: queue wait, turn, model and tool calls, the reply', () => {
    const shown = rows(turnTimelinePage([turn()]));
    expect(shown.map((r) => r.label)).toEqual([
      'received',
      'queued',
      'turn',
      'model gpt-main',
      'tool exec ✗',
      'model gpt-backup (fallback)',
      'reply queued',
    ]);
    // 2 s from receipt to reply: the queue is the first half, each model call a fifth.
    expect(shown[1]).toMatchObject({ left: 0, width: 50 });
    expect(shown[3]).toMatchObject({ left: 50, width: 20, step: 'model' });
    expect(shown[4]).toMatchObject({ left: 70, width: 10, step: 'failed' });
    expect(shown[5]).toMatchObject({ left: 80, width: 20 });
    expect(shown[6]?.left).toBe(100);
  });

  it('shows an approval wait instead of the queue for a resumed turn', () => {
    const resumed = turn();
    resumed.timeline = { ...(resumed.timeline as NonNullable<StoredTurn['timeline']>), askedAt: 0 };
    const labels = rows(turnTimelinePage([resumed])).map((r) => r.label);
    expect(labels).toContain('approval wait');
    expect(labels).not.toContain('queued');
  });

  it('escapes every value from the records', () => {
    const hostile = turn({ session: HOSTILE, outcome: HOSTILE, turn: HOSTILE });
    hostile.timeline?.steps.push({ kind: 'tool', name: HOSTILE, at: 0, ms: 1, ok: true });
    const html = turnTimelinePage([hostile]);
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;img src=x onerror=&quot;alert(1)&quot;&gt;');
  });

  it('leaves out turns recorded before timelines were kept, and says when there is none', () => {
    const { timeline: _none, ...old } = turn();
    expect(turnTimelinePage([old])).toContain('no turn with a timeline yet');
    expect(rows(turnTimelinePage([old, turn({ session: 'web:two' })]))).toHaveLength(7);
  });
});
