/**
 * The real shedding, in a process of its own: started with a key in its environment,
 * it blanks the key in place (no re-execution), keeps it in memory for the config,
 * and another process of the same user reading `/proc/<pid>/environ` (what exec
 * without a sandbox could do) finds the other variables but not the key.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const SHED = path.resolve('src/cli/shed-secrets.ts');
const SECRET_ENV = path.resolve('src/config/secret-env.ts');

/** Sheds, prints what it came to on one line, then waits until its stdin closes. */
const CHILD = `import { shedSecretEnvironment } from ${JSON.stringify(SHED)};
import { heldSecrets } from ${JSON.stringify(SECRET_ENV)};
const outcome = shedSecretEnvironment();
process.stdout.write(JSON.stringify({
  outcome,
  inProcessEnv: process.env.OPENAI_API_KEY ?? null,
  held: heldSecrets().OPENAI_API_KEY ?? null,
  handoff: process.env.MAGPIE_SECRET_HANDOFF ?? null,
}) + '\\n');
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));`;

let child: ChildProcessWithoutNullStreams | undefined;
afterEach(() => {
  child?.stdin.end();
  child = undefined;
});

/** Starts the child and resolves its first line of output. */
function startChild(env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  const started = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD], { env });
  child = started;
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    started.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    started.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.indexOf('\n');
      if (line !== -1) resolve(JSON.parse(out.slice(0, line)) as Record<string, unknown>);
    });
    started.once('exit', (status) => reject(new Error(`child exited ${status}: ${err}`)));
  });
}

describe.runIf(process.platform === 'linux')('shedding in place (environ-scrub.ts)', () => {
  it('blanks the key where /proc/<pid>/environ shows it, without re-executing, and holds it in memory', async () => {
    const key = `sk-scrub-test-${process.pid}-${Date.now()}`;
    const report = await startChild({
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      OPENAI_API_KEY: key,
      MAGPIE_SCRUB_NEIGHBOUR: 'stays-visible',
    });
    expect(report).toEqual({
      outcome: { kind: 'scrubbed', names: ['OPENAI_API_KEY'] },
      inProcessEnv: null,
      held: key,
      handoff: null,
    });
    const environ = readFileSync(`/proc/${child?.pid}/environ`, 'latin1');
    expect(environ).not.toContain(key);
    expect(environ).not.toContain(key.slice(0, 12));
    expect(environ).toContain('MAGPIE_SCRUB_NEIGHBOUR=stays-visible\0');
    // The name stays, its value is NUL bytes: nothing else in the block moved.
    expect(environ).toContain(`OPENAI_API_KEY=${'\0'.repeat(key.length)}`);
  });

  it('reports clean, touching nothing, when no secret is in the environment', async () => {
    const report = await startChild({
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      MAGPIE_SCRUB_ONLY: 'x',
    });
    expect(report.outcome).toEqual({ kind: 'clean' });
    expect(readFileSync(`/proc/${child?.pid}/environ`, 'latin1')).toContain('MAGPIE_SCRUB_ONLY=x\0');
  });
});
