/**
 * `magpie agent` and approvals without a terminal: by default nothing asks
 * (a script runs as before); with `--approval risky` a call that would ask is
 * refused at once with one line on stderr, so a script never hangs; and
 * `magpie approvals revoke` removes a rule `magpie agent` keeps in its file.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultStateDir } from '../../src/config/index.js';
import { type FakeOpenAI, type RecordedRequest, startFakeOpenAI } from '../fakes/openai-server.js';
import { build, daemonEnv, magpie, tempWorkspace } from './daemon-helpers.js';

function responder(req: RecordedRequest) {
  const messages = req.body.messages as Array<{ role: string; content: unknown }>;
  const last = messages.at(-1);
  if (last?.role === 'tool') return { content: `done: ${String(last.content).slice(0, 200)}` };
  const run = /run: (.+)$/m.exec(typeof last?.content === 'string' ? last.content : '')?.[1];
  return run
    ? { toolCalls: [{ name: 'exec', arguments: JSON.stringify({ command: run }) }] }
    : { content: 'ok' };
}

describe('magpie agent and approvals without a terminal', () => {
  let openai: FakeOpenAI;
  let workspace: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    build();
    workspace = tempWorkspace();
    openai = await startFakeOpenAI({ responder });
    env = daemonEnv({
      OPENAI_BASE_URL: openai.baseURL,
      MAGPIE_WORKSPACE: workspace,
      MAGPIE_APPROVAL: 'risky',
    });
  }, 120_000);
  afterAll(() => openai?.close());

  it('without --approval a script is not asked (off without a terminal) and the command runs', async () => {
    const agent = magpie(['agent', '-m', 'run: echo plain >> plain.txt'], env);
    expect(await agent.exited).toBe(0);
    expect(readFileSync(path.join(workspace, 'plain.txt'), 'utf8')).toBe('plain\n');
  });

  it('with --approval risky the call is refused at once, said on stderr, and the model is told', async () => {
    const agent = magpie(['agent', '--approval', 'risky', '-m', 'run: echo asked >> asked.txt'], env);
    expect(await agent.exited).toBe(0);
    expect(agent.stderr()).toContain(
      'magpie: not approved (no terminal to ask on): run `echo asked >> asked.txt`',
    );
    expect(agent.stdout()).toContain('did not approve');
    expect(existsSync(path.join(workspace, 'asked.txt'))).toBe(false);
  });

  it('a bad --approval is one line and exit 2', async () => {
    const agent = magpie(['agent', '--approval', 'sometimes', '-m', 'hi'], env);
    expect(await agent.exited).toBe(2);
    expect(agent.stderr().trim()).toBe(
      'magpie: magpie agent: --approval must be off, risky or all, not "sometimes"; see "magpie agent --help"',
    );
  });

  it('magpie approvals revoke removes a rule of a magpie agent chat', async () => {
    const file = path.join(defaultStateDir(workspace, env), 'approval-rules.json');
    writeFileSync(file, JSON.stringify({ 'cli:default': [{ tool: 'exec', prefix: 'git push' }] }));
    const missing = magpie(['approvals', 'revoke', 'cli:default', '2'], env);
    expect(await missing.exited).toBe(1);
    const revoke = magpie(['approvals', 'revoke', 'cli:default', '1'], env);
    expect(await revoke.exited).toBe(0);
    expect(revoke.stdout()).toContain('revoked in cli:default: git push');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({});
  });
});
