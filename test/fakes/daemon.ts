/**
 * The shared set-up of the end-to-end tests that run magpie's daemon roles
 * (`dist/cli/bin.js gateway`, `worker`, `send`…) as processes: a fresh build,
 * a workspace made by `magpie init`, the fake OpenAI server, the run's Redis,
 * and the processes a test started, killed when it is over.
 */
import { afterAll, afterEach, beforeAll, inject } from 'vitest';
import { build, type Proc, stop, tempWorkspace } from '../e2e/daemon-helpers.js';
import { type FakeOpenAI, startFakeOpenAI } from './openai-server.js';

/** What a daemon describe block shares; `fake` and `workspace` are set once its beforeAll has run. */
export interface DaemonSuite {
  fake: FakeOpenAI;
  workspace: string;
  redisUrl: string;
  /** Push each started process here; they are killed (SIGKILL) after each test, or after all with `killAfter: 'all'`. */
  procs: Proc[];
}

/**
 * Registers the describe block's hooks and returns the suite they fill in.
 *
 * @example
 * const suite = daemonSuite();
 * const { procs, redisUrl } = suite;
 * it('…', async () => { suite.fake.enqueue({ content: 'hi' }); });
 */
export function daemonSuite(options: { killAfter?: 'each' | 'all' } = {}): DaemonSuite {
  const suite = { redisUrl: inject('redisUrl'), procs: [] as Proc[] } as DaemonSuite;
  const killAll = async () => {
    for (const p of suite.procs.splice(0)) await stop(p, 'SIGKILL');
  };
  beforeAll(async () => {
    build();
    suite.workspace = tempWorkspace();
    suite.fake = await startFakeOpenAI();
  }, 120_000);
  afterAll(async () => {
    if (options.killAfter === 'all') await killAll();
    await suite.fake?.close();
  });
  if (options.killAfter !== 'all') afterEach(killAll);
  return suite;
}

/** Stops the processes in order (SIGTERM, as `stop` does), then closes the fake model; any may be missing. */
export async function stopProcsThenFake(
  procs: Array<Proc | undefined>,
  fake: { close(): Promise<void> } | undefined,
): Promise<void> {
  for (const proc of procs) await stop(proc);
  await fake?.close();
}
