/** `magpie agent` on a terminal: the answer appears as written and ends as exactly the reply. */
import { describe, expect, it } from 'vitest';
import { TerminalStream } from '../../../src/cli/terminal-stream.js';

function sink() {
  const writes: string[] = [];
  return { writes, out: { write: (text: string) => writes.push(text) > 0 } };
}

describe('TerminalStream', () => {
  it('prints deltas as they come and only the missing rest at the end', () => {
    const { writes, out } = sink();
    const stream = new TerminalStream(out);
    const turn = stream.turnOptions();
    turn.onIteration?.(1);
    turn.onDelta?.('Hel');
    turn.onDelta?.('lo');
    expect(writes.join('')).toBe('Hello');
    stream.finish('Hello world');
    expect(writes.join('')).toBe('Hello world\n');
  });

  it('starts the next model call on a fresh line, after tools', () => {
    const { writes, out } = sink();
    const stream = new TerminalStream(out);
    const turn = stream.turnOptions();
    turn.onDelta?.('Let me look.');
    turn.onIteration?.(2);
    turn.onDelta?.('Found it.');
    stream.finish('Found it.');
    expect(writes.join('')).toBe('Let me look.\nFound it.\n');
  });

  it('ends an open line when the turn stops early', () => {
    const { writes, out } = sink();
    const stream = new TerminalStream(out);
    stream.turnOptions().onDelta?.('half an ans');
    stream.endLine();
    expect(writes.join('')).toBe('half an ans\n');
  });
});
