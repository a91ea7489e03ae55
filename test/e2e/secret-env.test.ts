/**
 * With MAGPIE_EXEC_SANDBOX=off, exec can read `/proc/<magpie>/environ`, so
 * magpie's secrets must not be there: a daemon started with its key in the
 * environment blanks it there (cli/environ-scrub.ts), `.env` is read into memory
 * only, and no child (the private redis-server) inherits either. The key
 * still reaches the model's API, and an unsandboxed command sees neither.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defaultStateDir } from '../../src/config/index.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { build, daemonEnv, magpie, type Proc, stop, tempWorkspace } from './daemon-helpers.js';

const KEY = `sk-e2e-environ-${randomUUID()}`;
const BRAVE = `brave-e2e-environ-${randomUUID()}`;

/** The environment a process was started with, as /proc shows it to any process of the same user. */
const environOf = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'utf8');

describe('secrets stay out of the process environment (exec without a sandbox)', () => {
  let fake: FakeOpenAI;
  let start: Proc | undefined;
  let commandOutput = '';

  beforeAll(async () => {
    build();
    fake = await startFakeOpenAI({
      apiKey: KEY,
      responder: (req) => {
        const toolMessage = req.body.messages.find((m: { role: string }) => m.role === 'tool');
        if (toolMessage) {
          commandOutput = String(toolMessage.content);
          return { content: 'done' };
        }
        // Neither what exec's command inherits nor its parent's environment holds a secret.
        return {
          toolCalls: [
            { name: 'exec', arguments: JSON.stringify({ command: 'env; echo ---; ps -o args= -p $PPID' }) },
          ],
        };
      },
    });
  }, 120_000);
  afterEach(() => stop(start));
  afterAll(() => fake?.close());

  it('a daemon started with its key in the environment and another in .env shows neither in /proc/<pid>/environ', async () => {
    const workspace = tempWorkspace();
    const cwd = mkdtempSync(path.join(os.tmpdir(), 'magpie-e2e-envfile-'));
    writeFileSync(path.join(cwd, '.env'), `BRAVE_API_KEY=${BRAVE}\n`, { mode: 0o600 });
    const env = daemonEnv({
      OPENAI_BASE_URL: fake.baseURL,
      OPENAI_API_KEY: KEY,
      MAGPIE_WORKSPACE: workspace,
      MAGPIE_EXEC_SANDBOX: 'off',
      // The command runs unasked: this is about what it can read, not about approvals.
      MAGPIE_APPROVAL: 'off',
    });
    start = magpie(['start'], env, cwd);
    await start.waitFor(/magpie is running/, 20_000);
    const pid = start.child.pid ?? 0;
    const daemonEnviron = environOf(pid);
    expect(daemonEnviron).toContain(`MAGPIE_WORKSPACE=${workspace}`);
    expect(daemonEnviron).not.toContain(KEY);
    expect(daemonEnviron).not.toContain(BRAVE);
    // Blanked in place (Linux), not re-executed: the name is there with an empty value, no hand-over file.
    expect(daemonEnviron).toContain('OPENAI_API_KEY=\0');
    expect(daemonEnviron).not.toContain('MAGPIE_SECRET_HANDOFF');
    const info = JSON.parse(
      readFileSync(path.join(defaultStateDir(workspace, env), 'redis', 'magpie.json'), 'utf8'),
    ) as { pid: number };
    const redisEnviron = environOf(info.pid);
    expect(redisEnviron).not.toContain(KEY);
    expect(redisEnviron).not.toContain(BRAVE);

    // The key reaches the model (the fake answers 401 to any other), and the turn runs exec on the host.
    const send = magpie(['send', '-m', 'show me your environment', '--timeout', '20s'], env, cwd);
    expect(await send.exited).toBe(0);
    expect(send.stdout().trim()).toBe('done');
    expect(fake.requests.at(-1)?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(commandOutput).toContain(`MAGPIE_WORKSPACE=${workspace}`);
    expect(commandOutput).toMatch(/---\n.*bin\.js start/);
    expect(commandOutput).not.toContain(KEY);
    expect(commandOutput).not.toContain(BRAVE);
  });
});
