/** The progress line of a live reply shows harmless parts of a tool call only. */
import { describe, expect, it } from 'vitest';
import { PROGRESS_LINE_LIMIT, progressLine } from '../../../src/agent/progress-line.js';

const call = (name: string, args: unknown) => ({ name, arguments: JSON.stringify(args) });

describe('progressLine', () => {
  it('names the file, the query or the host', () => {
    expect(progressLine(call('read_file', { path: 'notes/plan.md' }))).toBe('reading notes/plan.md');
    expect(progressLine(call('web_search', { query: 'bus design' }))).toBe('searching the web: bus design');
    expect(progressLine(call('web_fetch', { url: 'https://example.com/a?token=secret' }))).toBe(
      'fetching example.com',
    );
  });

  it('never shows a command line or a URL query', () => {
    const exec = progressLine(call('exec', { command: 'curl -H "Authorization: Bearer sk-123" x' }));
    expect(exec).toBe('running: exec …');
    expect(progressLine(call('web_fetch', { url: 'https://h.example/p?key=sk-1' }))).not.toContain('sk-1');
  });

  it('keeps one short line whatever the model sends', () => {
    const line = progressLine(call('read_file', { path: `a\nb\u0007${'x'.repeat(500)}` }));
    expect(line).not.toMatch(/[\n\u0007]/);
    expect(line.length).toBeLessThanOrEqual(PROGRESS_LINE_LIMIT);
    expect(progressLine({ name: 'read_file', arguments: '{not json' })).toBe('reading a file');
  });
});
