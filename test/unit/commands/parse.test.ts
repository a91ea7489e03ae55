/** The one command rule: every spelling of /stop, arguments, @bot targets, and text that only looks like a command. */
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../../src/commands/list.js';
import { commandWord, parseCommand } from '../../../src/commands/parse.js';

/** True when the message is /stop (in any spelling the rule accepts). */
const isStopCommand = (text: string, bot?: string) => parseCommand(text, bot)?.name === 'stop';

describe('parseCommand', () => {
  it('reads /stop in every spelling a user types', () => {
    expect(parseCommand('/stop')).toEqual({ name: 'stop' });
    expect(parseCommand('/STOP')).toEqual({ name: 'stop' });
    expect(parseCommand('/Stop')).toEqual({ name: 'stop' });
    expect(parseCommand('/stop now')).toEqual({ name: 'stop', argument: 'now' });
    expect(parseCommand('/stop@magpie_bot')).toEqual({ name: 'stop', target: 'magpie_bot' });
    expect(parseCommand(' /stop')).toEqual({ name: 'stop' });
    expect(parseCommand('\t/stop \n')).toEqual({ name: 'stop' });
    expect(parseCommand('/stop@magpie_bot please, now')).toEqual({
      name: 'stop',
      target: 'magpie_bot',
      argument: 'please, now',
    });
  });

  it('treats text that only looks like /stop as text', () => {
    for (const text of [
      'stop',
      'STOP',
      'please /stop',
      '/stopp',
      '/stop-it',
      '/stop/now',
      '/ stop',
      '//stop',
      '/stop\nand then something else',
      '/stop @magpie_bot\nmore',
      '',
    ]) {
      expect(parseCommand(text), JSON.stringify(text)).toBeUndefined();
      expect(isStopCommand(text), JSON.stringify(text)).toBe(false);
    }
  });

  it('with a bot name, refuses commands addressed to another bot (any case)', () => {
    expect(isStopCommand('/stop@magpie_bot', 'magpie_bot')).toBe(true);
    expect(isStopCommand('/stop@MAGPIE_BOT', 'magpie_bot')).toBe(true);
    expect(isStopCommand('/stop', 'magpie_bot')).toBe(true);
    expect(isStopCommand('/stop@other_bot', 'magpie_bot')).toBe(false);
    expect(parseCommand('/new@other_bot', 'magpie_bot')).toBeUndefined();
    // Without a bot name the channel has already dropped other bots' commands.
    expect(parseCommand('/new@other_bot')).toEqual({ name: 'new', target: 'other_bot' });
  });

  it('knows exactly the listed commands, and /start as /help', () => {
    for (const { command } of COMMANDS) expect(parseCommand(`/${command}`)?.name).toBe(command);
    expect(parseCommand('/start')).toEqual({ name: 'help' });
    expect(parseCommand('/START@magpie_bot')).toEqual({ name: 'help', target: 'magpie_bot' });
    expect(parseCommand('/unknown')).toBeUndefined();
    expect(parseCommand('/usr/bin is a path')).toBeUndefined();
  });

  it('never takes a property of Object.prototype for a command', () => {
    for (const word of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
      expect(parseCommand(`/${word}`), word).toBeUndefined();
    }
  });

  it('keeps one line of arguments, trimmed, for every command', () => {
    expect(parseCommand('/model llama3.1')).toEqual({ name: 'model', argument: 'llama3.1' });
    expect(parseCommand('/MODEL@magpie_bot   gpt-4o  ')).toEqual({
      name: 'model',
      target: 'magpie_bot',
      argument: 'gpt-4o',
    });
    expect(parseCommand('/new please')).toEqual({ name: 'new', argument: 'please' });
    expect(parseCommand('/model ')).toEqual({ name: 'model' });
    expect(parseCommand('/model llama3.1\nand then more')).toBeUndefined();
  });
});

describe('commandWord', () => {
  it('reads any /word with its target, known or not', () => {
    expect(commandWord('/Status@MagpieBot now')).toEqual({
      word: 'status',
      target: 'MagpieBot',
      argument: 'now',
    });
    expect(commandWord('/whatever@other_bot')).toEqual({ word: 'whatever', target: 'other_bot' });
    expect(commandWord('hello /new')).toBeUndefined();
  });
});

describe('COMMANDS', () => {
  it('fits Telegram setMyCommands: lower-case names of 1–32 characters, descriptions of 1–256', () => {
    expect(COMMANDS.map((c) => c.command)).toEqual([
      'new',
      'stop',
      'approve',
      'deny',
      'approvals',
      'forget',
      'status',
      'usage',
      'model',
      'voice',
      'help',
    ]);
    for (const { command, description } of COMMANDS) {
      expect(command).toMatch(/^[a-z0-9_]{1,32}$/);
      expect(description.length).toBeGreaterThan(0);
      expect(description.length).toBeLessThanOrEqual(256);
    }
  });
});
