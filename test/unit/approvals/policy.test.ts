/**
 * Which calls ask (MAGPIE_APPROVAL): read-only exec commands read with the
 * exec guard's sh reader (so `ls; rm -rf x` asks, in any spelling), the
 * instruction files in any spelling of their path, agent cron tasks, other
 * chats, MCP tools; "always" rules, which untrusted text suspends.
 */
import { describe, expect, it } from 'vitest';
import { approvalVerdict, type PolicyContext } from '../../../src/approvals/policy.js';
import {
  commandPrefix,
  isReadOnlyCommand,
  matchesPrefixes,
} from '../../../src/approvals/read-only-commands.js';

const ctx: PolicyContext = {
  mode: 'risky',
  execNetwork: false,
  chat: { channel: 'telegram', chatId: '42' },
  taint: undefined,
  rules: [],
  workspace: '/srv/ws',
};
const exec = (command: string, over: Partial<PolicyContext> = {}) =>
  approvalVerdict('exec', { command }, { readOnly: false }, { ...ctx, ...over });

describe('read-only exec commands', () => {
  it.each([
    'ls -la',
    'cat notes/today.md | grep -i milk | wc -l',
    'git status',
    'git log --oneline -5',
    'git diff HEAD~1 -- src',
    'find . -name "*.md"',
    'grep -rn todo . 2>/dev/null',
    'head -n 5 a.txt; tail b.txt',
  ])('%s does not ask', (command) => {
    expect(isReadOnlyCommand(command)).toBe(true);
    expect(exec(command)).toEqual({ ask: false });
  });

  it.each([
    'ls; rm -rf x',
    'ls && r\\m -rf x',
    'l\'\'s; "rm" x',
    'cat a > b',
    'echo hi >> notes.md',
    'ls $(rm -rf x)',
    'ls `touch x`',
    'x=rm; $x -rf y',
    'find . -delete',
    'find . -exec rm {} +',
    'sort -o out.txt in.txt',
    'git push origin main',
    'git -C /etc status',
    'git diff --output=x',
    'sed -i s/a/b/ f',
    'python3 -c "print(1)"',
    'ls | sh',
    'ls | xargs rm',
  ])('%s asks', (command) => {
    expect(isReadOnlyCommand(command)).toBe(false);
    expect(exec(command).ask).toBe(true);
  });

  it('every exec asks when commands have network, and in mode all', () => {
    expect(exec('ls', { execNetwork: true })).toMatchObject({
      ask: true,
      summary: expect.stringContaining('network'),
    });
    expect(exec('ls', { mode: 'all' }).ask).toBe(true);
    expect(exec('git push', { mode: 'off' })).toEqual({ ask: false });
  });
});

describe('always rules', () => {
  it('store a command prefix: git push origin main → git push; npm install x → npm install; ./build.sh → ./build.sh', () => {
    expect(commandPrefix('git push origin main')).toBe('git push');
    expect(commandPrefix('npm install left-pad')).toBe('npm install');
    expect(commandPrefix('./build.sh --fast')).toBe('./build.sh');
    expect(commandPrefix('ls; git push')).toBe('git push');
    expect(exec('git push origin main')).toMatchObject({ rule: { tool: 'exec', prefix: 'git push' } });
  });

  it('allow every command of the line that matches a prefix or only reads, and nothing else', () => {
    const rules = [{ tool: 'exec', prefix: 'git push' }];
    expect(exec('git push origin main', { rules })).toEqual({ ask: false });
    expect(exec('git status && git push', { rules })).toEqual({ ask: false });
    expect(exec('git push; rm -rf x', { rules }).ask).toBe(true);
    expect(exec('git pushx', { rules }).ask).toBe(true);
    expect(exec('git push $(curl evil)', { rules }).ask).toBe(true);
    expect(matchesPrefixes('git  push', ['git push'])).toBe(true);
  });

  it('do not apply after the turn read untrusted text, and the rule is still offered', () => {
    const rules = [{ tool: 'exec', prefix: 'git push' }];
    expect(exec('git push', { rules, taint: 'a web page' })).toMatchObject({
      ask: true,
      rule: { prefix: 'git push' },
    });
  });
});

describe('files, cron, messages, MCP', () => {
  const write = (path: string, over: Partial<PolicyContext> = {}) =>
    approvalVerdict('write_file', { path, content: 'x' }, { readOnly: false }, { ...ctx, ...over });

  it.each([
    'AGENTS.md',
    './SOUL.md',
    'notes/../USER.md',
    '/srv/ws/IDENTITY.md',
    'heartbeat.MD',
    'skills/x/SKILL.md',
    'Skills/new.md',
  ])('writing %s asks', (file) => {
    expect(write(file)).toMatchObject({ ask: true, rule: { tool: 'write_file' } });
  });

  it('writing an ordinary note does not ask (except in mode all); a rule allows exactly that file', () => {
    expect(write('notes/today.md')).toEqual({ ask: false });
    expect(write('notes/AGENTS.md')).toEqual({ ask: false });
    expect(write('notes/today.md', { mode: 'all' }).ask).toBe(true);
    const rules = [{ tool: 'write_file', prefix: 'HEARTBEAT.md' }];
    expect(write('./HEARTBEAT.md', { rules })).toEqual({ ask: false });
    expect(write('AGENTS.md', { rules }).ask).toBe(true);
  });

  it('a cron task that runs an agent turn asks; a reminder does not', () => {
    const cron = (args: object) => approvalVerdict('cron', args, { readOnly: false }, ctx);
    expect(
      cron({ action: 'add', mode: 'agent', message: 'check the news', every_seconds: 3600 }),
    ).toMatchObject({
      ask: true,
      summary: expect.stringContaining('agent turn'),
    });
    expect(cron({ action: 'add', message: 'drink water', in_seconds: 60 })).toEqual({ ask: false });
    expect(cron({ action: 'list' })).toEqual({ ask: false });
  });

  it('a message to another chat asks; to this chat it does not', () => {
    const message = (args: object) => approvalVerdict('message', args, { readOnly: false }, ctx);
    expect(message({ content: 'hi' })).toEqual({ ask: false });
    expect(message({ content: 'hi', chat_id: '43' })).toMatchObject({
      ask: true,
      rule: { prefix: 'telegram:43' },
    });
    expect(message({ content: 'hi', channel: 'discord', chat_id: '42' }).ask).toBe(true);
  });

  it('an MCP tool asks unless its server marks it read-only; read-only tools never ask', () => {
    expect(
      approvalVerdict('gh_create_issue', { title: 'x' }, { mcp: true, readOnly: false }, ctx),
    ).toMatchObject({
      ask: true,
      summary: expect.stringContaining('MCP tool'),
    });
    expect(approvalVerdict('gh_list', {}, { mcp: true, readOnly: true }, ctx)).toEqual({ ask: false });
    expect(approvalVerdict('web_fetch', { url: 'x' }, { readOnly: true }, { ...ctx, mode: 'all' })).toEqual({
      ask: false,
    });
  });
});
