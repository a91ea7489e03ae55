/**
 * Benchmark: wall time of `magpie agent -m hi` against a local endpoint that
 * answers at once, next to `node -e ''` on the same machine in the same run
 * (run alternately, so drift hits both). Prints one JSON object.
 *
 *   npx tsx bench/agent-cli.ts [--runs 15] [--bin path/to/bin.js] [--baseline path/to/old/bin.js] [--key-in-dotenv]
 *
 * The key is in the environment by default, so magpie sheds it first (cli/shed-secrets.ts:
 * blanked in place on Linux, one Node start-up; a re-execution, two, where that fails or
 * in builds before issue 29's). `--key-in-dotenv` puts it in `.env` instead.
 *
 * `--baseline` times a second build of the CLI (e.g. an older commit's) in the
 * same loop, so before and after come from one run. Target: median
 * ratio ≤ 3 (issue 29). Where /usr/bin/time exists, each run's CPU time (user +
 * sys of the process and its threads) is reported too (`*_cpu_ms`): on a loaded
 * machine it moves far less than wall time. Builds dist/ (`npm run build`: tsc, then the esbuild bundle) first
 * when it is missing.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { startFakeOpenAI } from '../test/fakes/openai-server.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '15' },
    bin: { type: 'string' },
    baseline: { type: 'string' },
    'key-in-dotenv': { type: 'boolean', default: false },
  },
});
/** `--bin` measures another build of the CLI (e.g. a bundle) against the same endpoint. */
const bin = path.resolve(values.bin ?? path.join(root, 'dist', 'cli', 'bin.js'));
const baseline = values.baseline === undefined ? undefined : path.resolve(values.baseline);
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1) throw new RangeError('--runs must be a positive whole number');

/** GNU time, which reports a child's CPU time (Node cannot: it has no wait4). */
const TIME = '/usr/bin/time';
const cpuTimed = existsSync(TIME);

/** Wall milliseconds of one child process, start to exit, and its CPU milliseconds (user + sys) when known. */
async function timed(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ wall: number; cpu?: number }> {
  const started = performance.now();
  if (!cpuTimed) {
    await run(process.execPath, args, { env, cwd });
    return { wall: performance.now() - started };
  }
  const out = path.join(cwd, 'cpu-time.txt');
  await run(TIME, ['-f', '%U %S', '-o', out, process.execPath, ...args], { env, cwd });
  const wall = performance.now() - started;
  const [user = 0, sys = 0] = (await readFile(out, 'utf8')).trim().split(/\s+/).map(Number);
  return { wall, cpu: (user + sys) * 1000 };
}

function stats(samples: number[]): { min: number; median: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  const median = sorted.length % 2 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  const round = (n: number) => Math.round(n * 10) / 10;
  return { min: round(sorted[0]!), median: round(median), max: round(sorted.at(-1)!) };
}

if (!existsSync(bin)) await run('npm', ['run', 'build', '--silent'], { cwd: root });

const fake = await startFakeOpenAI({ responder: () => ({ content: 'ok' }) });
const dir = await mkdtemp(path.join(os.tmpdir(), 'magpie-bench-'));
try {
  const workspace = path.join(dir, 'workspace');
  const keyInDotenv = values['key-in-dotenv'] === true;
  if (keyInDotenv) await writeFile(path.join(dir, '.env'), 'OPENAI_API_KEY=bench\n');
  const env = {
    PATH: process.env.PATH,
    HOME: dir,
    ...(keyInDotenv ? {} : { OPENAI_API_KEY: 'bench' }),
    OPENAI_BASE_URL: fake.baseURL,
    MAGPIE_WORKSPACE: workspace,
    // Where exec runs decides whether start-up probes bwrap: measure either with MAGPIE_EXEC_SANDBOX=off|auto.
    ...(process.env.MAGPIE_EXEC_SANDBOX ? { MAGPIE_EXEC_SANDBOX: process.env.MAGPIE_EXEC_SANDBOX } : {}),
  };
  await run(process.execPath, [bin, 'init'], { env, cwd: dir });
  const magpie = [bin, 'agent', '-m', 'hi'];
  const node = ['-e', ''];
  const old = baseline ? [baseline, 'agent', '-m', 'hi'] : undefined;
  // Warm-up: file cache and the session file exist before timing.
  await timed(magpie, env, dir);
  await timed(node, env, dir);
  if (old) await timed(old, env, dir);
  const magpieMs: number[] = [];
  const nodeMs: number[] = [];
  const oldMs: number[] = [];
  const magpieCpu: number[] = [];
  const nodeCpu: number[] = [];
  const oldCpu: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    const a = await timed(magpie, env, dir);
    const b = await timed(node, env, dir);
    if (old) {
      const c = await timed(old, env, dir);
      oldMs.push(c.wall);
      if (c.cpu !== undefined) oldCpu.push(c.cpu);
    }
    magpieMs.push(a.wall);
    nodeMs.push(b.wall);
    if (a.cpu !== undefined && b.cpu !== undefined) {
      magpieCpu.push(a.cpu);
      nodeCpu.push(b.cpu);
    }
    ratios.push(a.wall / b.wall);
  }
  const m = stats(magpieMs);
  const n = stats(nodeMs);
  const o = old ? stats(oldMs) : undefined;
  process.stdout.write(
    `${JSON.stringify({
      bench: 'agent-cli',
      bin: path.relative(root, bin),
      runs,
      key: keyInDotenv ? '.env' : 'environment (shed first)',
      magpie_ms: m,
      node_ms: n,
      ratio: Math.round((m.median / n.median) * 100) / 100,
      pairwise_ratio: stats(ratios),
      target_ratio: 3,
      ...(magpieCpu.length > 0
        ? {
            magpie_cpu_ms: stats(magpieCpu),
            node_cpu_ms: stats(nodeCpu),
            cpu_ratio: Math.round((stats(magpieCpu).median / stats(nodeCpu).median) * 100) / 100,
          }
        : {}),
      ...(o && baseline
        ? {
            baseline: {
              bin: path.relative(root, baseline),
              magpie_ms: o,
              ratio: Math.round((o.median / n.median) * 100) / 100,
              ...(oldCpu.length > 0 ? { magpie_cpu_ms: stats(oldCpu) } : {}),
            },
          }
        : {}),
      node: process.version,
      cpus: os.cpus().length,
      loadavg: os.loadavg().map((l) => Math.round(l * 100) / 100),
    })}\n`,
  );
} finally {
  await fake.close();
  await rm(dir, { recursive: true, force: true });
}
