/** The router: every command of the table in every spelling, where it runs, and what is text. */
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../../src/commands/list.js';
import { routeCommand } from '../../../src/commands/router.js';

describe('routeCommand', () => {
  it('recognises every command of the table, in any case, with @bot and arguments', () => {
    for (const { command, runs } of COMMANDS) {
      const spellings: Array<[string, { target?: string; argument?: string }]> = [
        [`/${command}`, {}],
        [`/${command.toUpperCase()}`, {}],
        [` /${command[0]!.toUpperCase()}${command.slice(1)} `, {}],
        [`/${command}@MagpieBot`, { target: 'MagpieBot' }],
        [`/${command} now please`, { argument: 'now please' }],
        [`/${command.toUpperCase()}@magpiebot  now `, { target: 'magpiebot', argument: 'now' }],
      ];
      for (const [text, extra] of spellings) {
        const route = routeCommand(text, 'MagpieBot');
        expect(route.runs, text).toBe(runs);
        expect(route.command, text).toEqual({ name: command, ...extra });
      }
    }
  });

  it('runs /stop at once and the others in the turn', () => {
    expect(routeCommand('/STOP now').runs).toBe('at-once');
    for (const text of ['/new', '/status', '/model gpt-4o', '/help', '/start'])
      expect(routeCommand(text).runs, text).toBe('in-turn');
    expect(routeCommand('/start')).toEqual({ runs: 'in-turn', command: { name: 'help' } });
  });

  it('passes an unknown /foo, a second line, another bot and look-alikes through as text', () => {
    for (const text of [
      '/foo',
      '/foo bar',
      '/stopp',
      'stop',
      'please /stop',
      '/stop\nand then this',
      '/usr/bin is a path',
      '/constructor',
      '',
    ]) {
      expect(routeCommand(text), JSON.stringify(text)).toEqual({ runs: 'text' });
    }
    expect(routeCommand('/stop@other_bot', 'MagpieBot')).toEqual({ runs: 'text' });
    // Without the bot's name (the channel already dropped other bots' commands) the target is kept.
    expect(routeCommand('/stop@other_bot').runs).toBe('at-once');
  });

  it('every table entry has a help line Telegram accepts and a unique name', () => {
    const names = COMMANDS.flatMap((c) => [c.command, ...('aliases' in c ? c.aliases : [])]);
    expect(new Set(names).size).toBe(names.length);
    for (const c of COMMANDS) {
      expect(c.command).toMatch(/^[a-z0-9_]{1,32}$/);
      expect(c.description.length).toBeGreaterThan(0);
      expect(c.description.length).toBeLessThanOrEqual(256);
    }
  });
});
