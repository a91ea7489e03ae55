/**
 * `magpie send` streams, end to end: `magpie gateway` and `magpie worker`
 * processes on real Redis, the fake OpenAI server writing slowly, and the
 * built `magpie send` whose stdout is a pipe (as with `> out.txt`): text
 * shows before the turn ends, stdout ends with exactly the reply, progress
 * goes to stderr only; --no-stream and MAGPIE_STREAM=off print the whole
 * reply at once.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type FakeOpenAI, type FakeReply, lastUserText, startFakeOpenAI } from '../fakes/openai-server.js';
import { build, daemonEnv, magpie, type Proc, pipedChat, stop, tempWorkspace } from './daemon-helpers.js';

const SLOW = Array.from({ length: 10 }, (_, i) => `Sentence ${i + 1} of a slow answer.`).join(' ');
const AFTER_TOOL = 'The notes say nothing about it.';

describe('magpie send streaming (gateway + worker processes)', () => {
  let fake: FakeOpenAI;
  let workspace: string;
  let env: NodeJS.ProcessEnv;
  const procs: Proc[] = [];
  const redisUrl = inject('redisUrl');

  beforeAll(async () => {
    build();
    workspace = tempWorkspace();
    fake = await startFakeOpenAI({
      responder: (req): FakeReply => {
        const messages = req.body.messages as Array<{ role: string }>;
        if (messages.at(-1)?.role === 'tool') return { content: AFTER_TOOL, delayMs: 1_500 };
        if (lastUserText(req).includes('look it up'))
          return {
            content: 'Let me read my notes.',
            toolCalls: [{ name: 'read_file', arguments: '{"path":"notes.md"}' }],
          };
        return { content: SLOW, pieces: 10, pieceDelayMs: 300 };
      },
    });
    env = daemonEnv({ REDIS_URL: redisUrl, OPENAI_BASE_URL: fake.baseURL, MAGPIE_WORKSPACE: workspace });
    const gateway = run(['gateway'], env);
    const worker = run(['worker'], env);
    await Promise.all([gateway.waitFor(/magpie is running/), worker.waitFor(/magpie is running/)]);
  }, 120_000);
  afterAll(async () => {
    for (const p of procs.splice(0)) await stop(p, 'SIGKILL');
    await fake?.close();
  });
  function run(args: string[], runEnv: NodeJS.ProcessEnv): Proc {
    const p = magpie(args, runEnv);
    procs.push(p);
    return p;
  }

  /** Runs `magpie send`, recording each piece of stdout as it arrived. */
  async function send(args: string[], extraEnv: Record<string, string> = {}) {
    const proc = run(['send', ...args, '--timeout', '30s'], { ...env, ...extraEnv });
    const chunks: string[] = [];
    proc.child.stdout?.on('data', (c: Buffer) => chunks.push(c.toString()));
    const code = await proc.exited;
    return { code, chunks, stdout: proc.stdout(), stderr: proc.stderr() };
  }

  it('shows text before the turn ends and ends stdout with exactly the reply', async () => {
    const out = await send(['-m', 'tell me slowly', '--chat', 'stream-1']);
    expect(out.code).toBe(0);
    expect(out.stdout).toBe(`${SLOW}\n`);
    // Written in pieces while the model wrote: the first was a strict beginning of the answer.
    expect(out.chunks.length).toBeGreaterThan(2);
    expect(out.chunks[0]!.length).toBeGreaterThan(0);
    expect(SLOW.startsWith(out.chunks[0]!)).toBe(true);
    expect(out.chunks[0]!.length).toBeLessThan(SLOW.length);
    expect(out.stderr).not.toMatch(/Sentence/);
  });

  it('--no-stream prints the whole reply at once', async () => {
    const out = await send(['-m', 'tell me slowly', '--chat', 'stream-2', '--no-stream']);
    expect(out.code).toBe(0);
    expect(out.chunks).toEqual([`${SLOW}\n`]);
  });

  it('MAGPIE_STREAM=off in the client environment prints the whole reply at once', async () => {
    const out = await send(['-m', 'tell me slowly', '--chat', 'stream-3'], { MAGPIE_STREAM: 'off' });
    expect(out.code).toBe(0);
    expect(out.chunks).toEqual([`${SLOW}\n`]);
  });

  it('magpie chat (piped) streams the answer after its prompt and ends with the whole reply', async () => {
    const chat = pipedChat(procs, 'stream-5', '30s', env, 'tell me slowly\n');
    const chunks: string[] = [];
    chat.child.stdout?.on('data', (c: Buffer) => chunks.push(c.toString()));
    expect(await chat.exited).toBe(0);
    expect(chat.stdout()).toContain(`magpie> ${SLOW}\n`);
    // The answer arrived in pieces: some chunk holds the answer's start but not its end.
    expect(chunks.some((c) => c.includes('Sentence 1 ') && !c.includes('Sentence 10 '))).toBe(true);
  });

  it('the progress line while a tool runs goes to stderr, never into stdout', async () => {
    const out = await send(['-m', 'look it up', '--chat', 'stream-4']);
    expect(out.code).toBe(0);
    expect(out.stdout.endsWith(`${AFTER_TOOL}\n`)).toBe(true);
    expect(out.stdout).not.toMatch(/reading/);
    // Before the reply only the first iteration's text may have shown, on a line of its own.
    expect(['', 'Let me read my notes.\n']).toContain(out.stdout.slice(0, -`${AFTER_TOOL}\n`.length));
    expect(out.stderr).toContain('… reading notes.md\n');
  });
});
