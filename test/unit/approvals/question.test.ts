/** The question's words, its buttons, and the reading of typed answers. */
import { describe, expect, it } from 'vitest';
import { newCode, parseAnswer, questionActions, questionText } from '../../../src/approvals/question.js';
import { OutboundActionSchema } from '../../../src/messages/messages.js';

describe('approval questions', () => {
  it('codes are five letters without 0, O, 1 or I', () => {
    for (let i = 0; i < 200; i++) expect(newCode()).toMatch(/^[A-HJ-NP-Z2-9]{5}$/);
  });

  it('say what, why now, and what to type; the buttons are valid actions', () => {
    const q = {
      code: 'K7QF2',
      summary: 'run `git push origin main` in the workspace',
      rule: { tool: 'exec', prefix: 'git push' },
      tainted: true,
      taint: 'a web page',
    };
    expect(questionText(q)).toBe(
      [
        'magpie wants to run `git push origin main` in the workspace (after reading a web page).',
        'Allow it? Answer /approve K7QF2 or /deny K7QF2.',
        '/approve K7QF2 always also allows `git push` in this chat from now on.',
        'It asks even where an "always" rule would allow it, because of what the turn read.',
      ].join('\n'),
    );
    const actions = questionActions(q);
    expect(actions.map((a) => a.command)).toEqual(['/approve K7QF2', '/approve K7QF2 always', '/deny K7QF2']);
    expect(actions.map((a) => a.label)).toEqual(['Allow once', 'Always allow git push', 'Deny']);
    for (const a of actions) expect(OutboundActionSchema.safeParse(a).success).toBe(true);
    expect(questionActions({ code: 'K7QF2' }).map((a) => a.label)).toEqual(['Allow once', 'Deny']);
  });

  it('reads /approve CODE, /approve CODE always and /deny CODE, in any case, and nothing else', () => {
    expect(parseAnswer('approve', 'k7qf2')).toEqual({ code: 'K7QF2', decision: 'allow' });
    expect(parseAnswer('approve', 'K7QF2 Always')).toEqual({ code: 'K7QF2', decision: 'always' });
    expect(parseAnswer('deny', ' K7QF2 ')).toEqual({ code: 'K7QF2', decision: 'deny' });
    expect(parseAnswer('approve', undefined)).toBeUndefined();
    expect(parseAnswer('approve', 'K7QF2 please')).toBeUndefined();
    expect(parseAnswer('deny', 'K7QF2 always')).toBeUndefined();
    expect(parseAnswer('approve', 'K7QF')).toBeUndefined();
  });
});
