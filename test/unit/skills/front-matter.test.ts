// The fast front-matter reader: whenever it answers, it agrees with the yaml package;
// anything beyond `key: plain text` lines is left to yaml.
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readFrontMatter, simpleMapping } from '../../../src/skills/front-matter.js';

const VALUES = [
  'daily-briefing',
  "Morning briefing - today's plans, open follow-ups, and the weather",
  'true',
  'False',
  'TRUE',
  'yes',
  'no',
  'null',
  'Null',
  '~',
  '42',
  '-1',
  '+3',
  '.5',
  '.inf',
  '0x1F',
  '1e3',
  'a: b',
  'a:b',
  'ends with:',
  'has # comment',
  'has#hash',
  '"quoted"',
  "'single'",
  'say "hi" twice',
  '[a, b]',
  '{a: 1}',
  'a [b] {c}',
  '&anchor x',
  '*alias',
  '!tag x',
  '| block',
  '> folded',
  '%percent',
  '@at',
  '`tick',
  '- item',
  '-dash',
  '? key',
  'trailing spaces   ',
  'tab\tinside',
  'ünïcödé ✓',
  'http://example.com/x',
  'C:\\path',
];

describe('simpleMapping', () => {
  it('agrees with the yaml package on every value it accepts', () => {
    let accepted = 0;
    for (const value of VALUES) {
      const block = `name: x\ndescription: ${value}\nalways: false`;
      const fast = simpleMapping(block);
      if (fast === undefined) continue;
      accepted += 1;
      expect(fast, value).toEqual(parse(block));
    }
    expect(accepted).toBeGreaterThan(8);
  });

  it('reads the usual front matter without the yaml package', () => {
    expect(simpleMapping('name: daily-briefing\ndescription: Morning briefing\nalways: true')).toEqual({
      name: 'daily-briefing',
      description: 'Morning briefing',
      always: true,
    });
  });

  it('leaves numbers, nulls, quotes, comments, duplicates, blank and indented lines to yaml', () => {
    for (const block of [
      'always: 1',
      'always: null',
      'description: "x"',
      'description: x # note',
      'name: a\nname: b',
      'name: a\n\ndescription: b',
      'description: a\n  continued',
      'tags:\n  - a',
      'name:\tx',
      'name: a\r',
      '',
    ]) {
      expect(simpleMapping(block), block).toBeUndefined();
    }
  });
});

describe('readFrontMatter', () => {
  it('gives what yaml gives for blocks the fast path declines', async () => {
    const block = 'name: a\ndescription: "quoted: text"\nalways: true # comment\ntags: [x, y]';
    expect(await readFrontMatter(block)).toEqual(parse(block));
  });

  it('throws the yaml error for invalid YAML', async () => {
    await expect(readFrontMatter('name: a\nname: b')).rejects.toThrow();
  });
});
