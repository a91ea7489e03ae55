/**
 * Benchmark: what MCP costs `magpie agent -m hi` start-up. Times the command
 * (against a local endpoint that answers at once) without an mcp.json and
 * with one naming server-everything over stdio, run alternately, and records
 * which bundle chunks each run loaded (a module hook writes them to a file):
 * without mcp.json the MCP SDK's chunk must not be among them. Prints one
 * JSON object.
 *
 *   npx tsx bench/mcp-startup.ts [--runs 10] [--bin path/to/bin.js]
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { startFakeOpenAI } from '../test/fakes/openai-server.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: { runs: { type: 'string', default: '10' }, bin: { type: 'string' } },
});
const bin = path.resolve(values.bin ?? path.join(root, 'dist', 'cli', 'bin.js'));
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1) throw new RangeError('--runs must be a positive whole number');
const everything = path.join(
  path.dirname(
    createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/package.json'),
  ),
  'dist',
  'index.js',
);
/** A string only the MCP SDK's code holds. */
const SDK_MARK = 'Streamable HTTP error';

function stats(samples: number[]): { min: number; median: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  const median = sorted.length % 2 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  const round = (n: number) => Math.round(n * 10) / 10;
  return { min: round(sorted[0]!), median: round(median), max: round(sorted.at(-1)!) };
}

if (!existsSync(bin)) await run('npm', ['run', 'build', '--silent'], { cwd: root });

const fake = await startFakeOpenAI({ responder: () => ({ content: 'ok' }) });
const dir = await mkdtemp(path.join(os.tmpdir(), 'magpie-bench-mcp-'));
try {
  const workspace = path.join(dir, 'workspace');
  const loadedFile = path.join(dir, 'loaded.txt');
  // A module hook that notes every file the run loads.
  await writeFile(
    path.join(dir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) {\n  appendFileSync(${JSON.stringify(loadedFile)}, url + '\\n');\n  return next(url, context);\n}\n`,
  );
  await writeFile(
    path.join(dir, 'register.mjs'),
    `import { register } from 'node:module';\nregister(${JSON.stringify(new URL(`file://${path.join(dir, 'hooks.mjs')}`).href)});\n`,
  );
  const withMcp = path.join(dir, 'with-mcp');
  const without = path.join(dir, 'without-mcp');
  const base = {
    PATH: process.env.PATH,
    HOME: dir,
    OPENAI_API_KEY: 'bench',
    OPENAI_BASE_URL: fake.baseURL,
    MAGPIE_WORKSPACE: workspace,
  };
  await run(process.execPath, [bin, 'init'], { env: base, cwd: dir });
  await run('mkdir', ['-p', withMcp, without]);
  await writeFile(
    path.join(withMcp, 'mcp.json'),
    JSON.stringify({
      mcpServers: { everything: { command: process.execPath, args: [everything, 'stdio'] } },
    }),
  );
  const args = [bin, 'agent', '-m', 'hi'];
  const timed = async (cwd: string): Promise<number> => {
    const started = performance.now();
    await run(process.execPath, args, { env: base, cwd });
    return performance.now() - started;
  };
  /** One run with the hook: the chunks it loaded, their size, and whether the SDK was among them. */
  const traced = async (cwd: string) => {
    await rm(loadedFile, { force: true });
    await run(process.execPath, ['--import', path.join(dir, 'register.mjs'), ...args], { env: base, cwd });
    const urls = (await readFile(loadedFile, 'utf8')).split('\n').filter((u) => u.startsWith('file://'));
    const files = urls
      .map((u) => fileURLToPath(u))
      .filter((f) => f.startsWith(path.dirname(path.dirname(bin))));
    let bytes = 0;
    let sdk = false;
    for (const f of files) {
      bytes += (await stat(f)).size;
      if ((await readFile(f, 'utf8')).includes(SDK_MARK)) sdk = true;
    }
    return { bundle_files_loaded: files.length, bundle_kb_loaded: Math.round(bytes / 1024), sdk_loaded: sdk };
  };
  await timed(without);
  await timed(withMcp);
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    a.push(await timed(without));
    b.push(await timed(withMcp));
  }
  const plain = stats(a);
  const mcp = stats(b);
  process.stdout.write(
    `${JSON.stringify({
      bench: 'mcp-startup',
      bin: path.relative(root, bin),
      runs,
      without_mcp_json: { agent_ms: plain, ...(await traced(without)) },
      with_mcp_json_stdio_server: { agent_ms: mcp, ...(await traced(withMcp)) },
      mcp_extra_ms: Math.round((mcp.median - plain.median) * 10) / 10,
      node: process.version,
      cpus: os.cpus().length,
      loadavg: os.loadavg().map((l) => Math.round(l * 100) / 100),
    })}\n`,
  );
} finally {
  await fake.close();
  await rm(dir, { recursive: true, force: true });
}
