/**
 * TerminalReply: the answer on stdout, the progress line never inside it when
 * stdout is a file or pipe (stderr then), and as a dim status line that the
 * next text erases in chat on a terminal.
 */
import { describe, expect, it } from 'vitest';
import { TerminalReply } from '../../../../src/channels/cli/terminal-reply.js';

function stream(isTTY: boolean) {
  const chunks: string[] = [];
  return {
    isTTY,
    chunks,
    write(text: string) {
      chunks.push(text);
      return true;
    },
    text: () => chunks.join(''),
  };
}

/** A TerminalReply over two recording streams, both terminals or both not (`tty`). */
function terminal(tty: boolean, options: { prefix?: string; statusInPlace?: boolean } = {}) {
  const out = stream(tty);
  const err = stream(tty);
  return { out, err, reply: new TerminalReply({ out, err, ...options }) };
}

describe('TerminalReply', () => {
  it('stdout redirected: the answer only, progress on stderr, ending with the reply', () => {
    const { out, err, reply } = terminal(false);
    reply.live({ text: 'Let me look.' });
    reply.live({ text: 'Let me look.', progress: 'searching the web: weather' });
    reply.live({ text: 'Let me look.', progress: 'searching the web: weather' });
    reply.live({ text: '', progress: 'reading notes/city.md' });
    reply.live({ text: 'Sunny' });
    reply.final('Sunny, 21°C.');
    expect(out.text()).toBe('Let me look.\nSunny, 21°C.\n');
    // Each progress line once, on stderr; no terminal escapes in a file.
    expect(err.text()).toBe('… searching the web: weather\n… reading notes/city.md\n');
  });

  it('stdout and stderr on one terminal: the answer line ends before a progress line', () => {
    const { out, err, reply } = terminal(true);
    reply.live({ text: 'Checking' });
    reply.live({ text: 'Checking', progress: 'reading a file' });
    expect(out.text()).toBe('Checking\n');
    expect(err.text()).toBe('\x1b[2m… reading a file\x1b[0m\n');
    reply.final('Checking done');
    // The reply extends the text on screen: its rest follows on the fresh line.
    expect(out.text()).toBe('Checking\n done\n');
  });

  it('chat on a terminal: a dim status line in place, erased by the next text', () => {
    const { out, err, reply } = terminal(true, { prefix: 'magpie> ', statusInPlace: true });
    reply.live({ text: 'On it.' });
    reply.live({ text: 'On it.', progress: 'reading a.md' });
    reply.live({ text: '', progress: 'reading b.md' });
    reply.live({ text: 'Both read' });
    reply.final('Both read: done.');
    expect(err.text()).toBe('');
    expect(out.chunks).toEqual([
      'magpie> On it.',
      '\n',
      '\x1b[2m… reading a.md\x1b[0m',
      '\r\x1b[2K',
      '\x1b[2m… reading b.md\x1b[0m',
      '\r\x1b[2K',
      'magpie> Both read',
      ': done.\n',
    ]);
  });

  it('chat piped: the status goes to stderr like send', () => {
    const { out, err, reply } = terminal(false, { prefix: 'magpie> ', statusInPlace: true });
    reply.live({ text: '', progress: 'reading a.md' });
    reply.final('hi');
    expect(out.text()).toBe('magpie> hi\n');
    expect(err.text()).toBe('… reading a.md\n');
  });

  it('a mid-turn message gets its own line; abandon ends an open line and erases a status', () => {
    const { out, reply } = terminal(true, { prefix: 'magpie> ', statusInPlace: true });
    reply.live({ text: 'Sending you a note' });
    reply.message('the note');
    reply.live({ text: '', progress: 'waiting' });
    reply.abandon();
    expect(out.text()).toBe('magpie> Sending you a note\nmagpie> the note\n\x1b[2m… waiting\x1b[0m\r\x1b[2K');
    reply.abandon();
    expect(out.text().endsWith('\r\x1b[2K')).toBe(true);
  });

  it('with nothing streamed prints what it printed before streaming existed', () => {
    const out = stream(false);
    const reply = new TerminalReply({ out, err: stream(false) });
    reply.message('mid-turn');
    reply.final('the reply');
    expect(out.text()).toBe('mid-turn\nthe reply\n');
  });
});

describe('TerminalReply progress lines', () => {
  it('are one line of plain text: escapes and newlines from the snapshot cannot reach the terminal', () => {
    const { out, reply } = terminal(true, { statusInPlace: true });
    reply.live({ text: '', progress: 'reading \x1b]0;pwned\x07a.md\nyou> ' });
    expect(out.text()).toBe('\x1b[2m… reading  ]0;pwned a.md you> \x1b[0m');
  });
});
