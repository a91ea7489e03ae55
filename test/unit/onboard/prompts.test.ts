/**
 * The questions of `magpie onboard` over real node:readline streams: piped
 * answers that arrive all at once are each kept for their question, a hidden
 * answer never reaches the output (piped or on a terminal, where readline
 * echoes what is typed), Enter takes the default, and the end of the input or
 * Ctrl-C cancels.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { CancelledError } from '../../../src/errors/index.js';
import { Prompter } from '../../../src/onboard/prompts.js';

function streams(tty = false) {
  const input = new PassThrough() as PassThrough & { isTTY?: boolean; setRawMode?: (on: boolean) => void };
  if (tty) {
    input.isTTY = true;
    input.setRawMode = () => undefined;
  }
  const output = new PassThrough();
  let printed = '';
  output.on('data', (c: Buffer) => {
    printed += c.toString();
  });
  return { input, output, printed: () => printed };
}

describe('Prompter', () => {
  it('answers piped in one go are each kept for their own question', async () => {
    const s = streams();
    const prompter = new Prompter(s);
    s.input.write('first\nsecond\n\nfourth\n');
    expect(await prompter.ask('One')).toBe('first');
    expect(await prompter.ask('Two')).toBe('second');
    expect(await prompter.ask('Three', { default: 'dflt' })).toBe('dflt');
    expect(await prompter.ask('Four')).toBe('fourth');
    prompter.close();
    expect(s.printed()).toBe('One: first\nTwo: second\nThree [dflt]: \nFour: fourth\n');
  });

  it('a hidden piped answer is returned but never printed; its label replaces the default', async () => {
    const s = streams();
    const prompter = new Prompter(s);
    s.input.write('sk-secret-typed-key\n\n');
    expect(await prompter.ask('Key', { hidden: true })).toBe('sk-secret-typed-key');
    expect(
      await prompter.ask('Again', {
        hidden: true,
        default: 'sk-kept-secret',
        defaultLabel: 'Enter keeps sk-…cret',
      }),
    ).toBe('sk-kept-secret');
    prompter.close();
    expect(s.printed()).toBe('Key: \nAgain [Enter keeps sk-…cret]: \n');
  });

  it('on a terminal readline echoes a visible answer but not a hidden one', async () => {
    const s = streams(true);
    const prompter = new Prompter(s);
    const visible = prompter.ask('Name');
    s.input.write('alice\r');
    expect(await visible).toBe('alice');
    const hidden = prompter.ask('Key', { hidden: true });
    s.input.write('sk-typed-on-a-terminal\r');
    expect(await hidden).toBe('sk-typed-on-a-terminal');
    prompter.close();
    expect(s.printed()).toContain('alice');
    expect(s.printed()).not.toContain('sk-typed');
    expect(s.printed()).not.toMatch(/\*{3}/);
  });

  it('confirm takes y, n, the default on Enter, and asks again on anything else', async () => {
    const s = streams();
    const prompter = new Prompter(s);
    s.input.write('maybe\nY\n\nno\n');
    expect(await prompter.confirm('Write?', false)).toBe(true);
    expect(await prompter.confirm('Write?', true)).toBe(true);
    expect(await prompter.confirm('Write?', true)).toBe(false);
    prompter.close();
    expect(s.printed()).toContain('please answer y or n');
  });

  it('the input ending before an answer is a CancelledError naming the question', async () => {
    const s = streams();
    const prompter = new Prompter(s);
    s.input.end('only one\n');
    expect(await prompter.ask('First')).toBe('only one');
    const err = await prompter.ask('Second question').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CancelledError);
    expect((err as CancelledError).message).toContain('"Second question"');
    expect((err as CancelledError).exitCode).toBe(130);
  });

  it('Ctrl-C on a terminal cancels the waiting question and aborts the signal', async () => {
    const s = streams(true);
    const prompter = new Prompter(s);
    const pending = prompter.ask('Waiting').catch((e: unknown) => e);
    s.input.write('\x03');
    expect(await pending).toBeInstanceOf(CancelledError);
    expect(prompter.signal.aborted).toBe(true);
    prompter.close();
  });
});
