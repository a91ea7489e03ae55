import { describe, expect, it } from 'vitest';
import { CODE_SPOKEN, cutAtSentence, speakableText, TABLE_SPOKEN } from '../../../src/voice/speakable.js';

describe('speakableText', () => {
  it('drops Markdown marks, reads links by their words and bare addresses by their site', () => {
    const text = speakableText(
      '# Plan\n\nSee **[the docs](https://nodejs.org/api)** and https://www.example.com/x?y=1 _today_.',
      1500,
    );
    expect(text).toBe('Plan. See the docs and example.com today.');
  });

  it('puts a pointer in place of code blocks and tables, and keeps inline code words', () => {
    const text = speakableText(
      'Run `npm test`:\n\n```sh\nrm -rf /\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |',
      1500,
    );
    expect(text).toBe(`Run npm test: ${CODE_SPOKEN} ${TABLE_SPOKEN}`);
    expect(text).not.toContain('rm -rf');
  });

  it('reads list items as sentences, nested ones after their item', () => {
    expect(speakableText('- milk\n- eggs\n  1. brown\n- [x] bread', 1500)).toBe('milk. eggs. brown. bread.');
  });

  it('says nothing for a reply that is only code or images', () => {
    expect(speakableText('![chart](https://x.test/c.png)', 1500)).toBe('');
    expect(speakableText('---', 1500)).toBe('');
  });
});

describe('cutAtSentence', () => {
  it('keeps whole sentences within the limit', () => {
    const text = 'One two three. Four five six! Seven eight nine?';
    expect(cutAtSentence(text, 35)).toBe('One two three. Four five six!');
    expect(cutAtSentence(text, 100)).toBe(text);
  });

  it('falls back to a clause, then a word, when no sentence ends early enough', () => {
    expect(cutAtSentence('a very long clause without end, then more words follow here', 40)).toBe(
      'a very long clause without end,',
    );
    expect(cutAtSentence('wordy words without any punctuation at all here', 20)).toBe('wordy words without');
  });
});
