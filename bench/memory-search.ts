/**
 * Benchmark: the memory search index over a generated workspace of 1,000
 * daily notes (20 lines each) and 200 conversations of 200 messages (user
 * and assistant text, with a tool round every tenth exchange that is not
 * indexed). English-like text: function words, then content words drawn
 * with a Zipf-Mandelbrot law (600 common English words, then 5,000 names),
 * and numbers. Prints one JSON object:
 *
 * - `buildMs`: the index built from nothing (target ≤ 5,000 ms);
 * - `updateMs`: bringing it up to date after one note changed (target ≤ 50 ms);
 * - `searchMs`: p50/p99 of a whole search as the tool runs it (lock, sync
 *   check of every file, query, snippets; target p99 ≤ 50 ms);
 * - `indexBytes`: the index on disk;
 * - `worker.rssGrowthMb`: RSS growth of a fresh process (node_args of a PM2
 *   worker) once it has loaded the index and run every query (target ≤ 40 MB).
 *
 * Timings are wall clock, with the CPU time beside them (on a busy machine
 * the wall clock also counts waiting for a CPU; `machine.load1` says how busy).
 * The measuring runs in child processes on the built dist/
 * (bench/memory-search-child.mjs); dist/ is compiled first (tsc) when older than the source.
 *
 *   npx tsx bench/memory-search.ts [--notes 1000] [--sessions 200] [--queries 300]
 *
 * Planted facts (in an old note, an old conversation) must be found, or the run fails.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'memory-search-child.mjs');
const { values } = parseArgs({
  options: {
    notes: { type: 'string', default: '1000' },
    lines: { type: 'string', default: '20' },
    sessions: { type: 'string', default: '200' },
    messages: { type: 'string', default: '200' },
    queries: { type: 'string', default: '300' },
  },
});
const TZ = 'Europe/Lisbon';
const WORKER_NODE_ARGS = ['--max-semi-space-size=1'];
const FIRST_DAY = Date.UTC(2023, 0, 1);
/** The note that holds the planted fact (note 30, 2023-01-31). */
const PLANTED_NOTE = 'memory/202301/20230131.md';

// biome-ignore format: a word list reads better packed
const WORDS = ('time year day week month morning evening night today tomorrow people family friend sister brother mother father son daughter wife husband child kids baby neighbour doctor dentist plumber electrician teacher boss colleague client team house flat home kitchen garden room door window roof boiler heater fridge oven car bike train bus flight airport station ticket trip holiday beach hotel city village street road shop market bank office school hospital pharmacy gym park river lake mountain forest weather rain sun snow wind cold warm hot dinner lunch breakfast coffee tea wine beer bread cheese fish chicken pasta rice soup cake fruit apple orange book film movie music song concert game match football tennis running walk swim class course lesson exam project meeting call email message letter phone number address birthday party wedding gift present money bill rent tax price budget payment invoice plan idea problem question answer reason result change news story report list note photo picture video website account password order delivery package repair leak noise smell pain cold flu appointment visit move moved moving buy bought sell sold pay paid send sent call called meet met visit visited fix fixed break broke clean cleaned cook cooked read wrote write watch watched play played start started finish finished book booked cancel cancelled remind remember forget forgot ask asked tell told need needed want wanted like liked love loved hate think thought feel felt try tried leave left arrive arrived return returned open opened close closed check checked agree agreed decide decided new old big small good bad great nice long short early late next last first second important busy free happy tired sick better worse quick slow cheap expensive quiet loud').split(' ');
// biome-ignore format: a word list reads better packed
const FUNCTION_WORDS = ('the a an and or but of to in on at for with from by is are was were be been it this that i you he she we they me my your our their his her not no do did have has had will would can could should about as if then so there here what when where who which how all some just also very more into out up over again').split(' ');

/** mulberry32: a small seeded generator, so every run has the same workspace. */
function generator(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Draws text: 45 % function words, 2 % numbers, the rest content words by a Zipf law (common words, then a long tail of names). */
function textMaker(random: () => number) {
  const syllables = [
    'ka',
    'lo',
    'mi',
    'ra',
    'te',
    'su',
    'no',
    'vi',
    'pe',
    'da',
    'ri',
    'go',
    'fa',
    'le',
    'bo',
    'ne',
  ];
  const names = new Set<string>();
  while (names.size < 5000) {
    let w = '';
    for (let j = 0; j < 2 + Math.floor(random() * 3); j++)
      w += syllables[Math.floor(random() * syllables.length)];
    names.add(w[0]!.toUpperCase() + w.slice(1));
  }
  const vocabulary = [...WORDS, ...names];
  const cdf: number[] = [];
  // Zipf-Mandelbrot, p(rank) ∝ 1 / (rank + 30): function words (drawn apart) take the head of
  // real English, so the commonest content word is ~0.6 % of content words, in ~9 % of chunks.
  const weight = (r: number) => 1 / (r + 30);
  let total = 0;
  for (let r = 1; r <= vocabulary.length; r++) total += weight(r);
  let acc = 0;
  for (let r = 1; r <= vocabulary.length; r++) {
    acc += weight(r) / total;
    cdf.push(acc);
  }
  const zipf = () => {
    const u = random();
    let lo = 0;
    let hi = cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return vocabulary[lo]!;
  };
  const word = () => {
    const u = random();
    if (u < 0.45) return FUNCTION_WORDS[Math.floor(random() * FUNCTION_WORDS.length)]!;
    if (u < 0.47) return String(Math.floor(random() * 10_000));
    return zipf();
  };
  const between = (a: number, b: number) => a + Math.floor(random() * (b - a + 1));
  return {
    sentence: (min: number, max: number) => Array.from({ length: between(min, max) }, word).join(' '),
    zipf,
    between,
  };
}

interface Corpus {
  notes: number;
  noteLines: number;
  sessions: number;
  messagesPerSession: number;
  textMessages: number;
  toolLines: number;
  bytes: number;
}

/** Writes the workspace; planted facts go into note 30 and conversation 17. */
function generateWorkspace(
  dir: string,
  notes: number,
  lines: number,
  sessions: number,
  messages: number,
): Corpus {
  const random = generator(16);
  const { sentence, between } = textMaker(random);
  let bytes = 0;
  const start = FIRST_DAY;
  mkdirSync(path.join(dir, 'memory'), { recursive: true });
  writeFileSync(path.join(dir, 'memory', 'MEMORY.md'), '# Long-term memory\n\n- The user lives in Lisbon.\n');
  for (let n = 0; n < notes; n++) {
    const day = new Date(start + n * 86_400_000);
    const ymd = day.toISOString().slice(0, 10);
    const [y, m, d] = ymd.split('-');
    const folder = path.join(dir, 'memory', `${y}${m}`);
    mkdirSync(folder, { recursive: true });
    const body = [`# ${ymd}`, ''];
    for (let l = 0; l < lines - 2; l++)
      body.push(
        `- ${String(between(7, 22)).padStart(2, '0')}:${String(between(0, 59)).padStart(2, '0')} ${sentence(6, 16)}`,
      );
    if (n === 30) body[5] = '- 10:15 Marta moved to Coimbra today; her new flat is on Rua Direita.';
    const text = `${body.join('\n')}\n`;
    bytes += text.length;
    writeFileSync(path.join(folder, `${y}${m}${d}.md`), text);
  }
  mkdirSync(path.join(dir, 'sessions'), { recursive: true });
  let toolLines = 0;
  for (let s = 0; s < sessions; s++) {
    const out: string[] = [];
    let t = start + s * 3 * 86_400_000;
    for (let m = 0; m < messages; m++) {
      t += between(5, 600) * 1000;
      const ts = new Date(t).toISOString();
      const role = m % 2 === 0 ? 'user' : 'assistant';
      let content = role === 'user' ? sentence(4, 25) : sentence(15, 70);
      if (s === 17 && m === 40)
        content = "The plumber's number is 912 345 678 — Rui, he fixed the boiler leak.";
      if (role === 'assistant' && m % 20 === 1) {
        out.push(
          JSON.stringify({
            role,
            content: null,
            toolCalls: [{ id: `c${m}`, name: 'exec', arguments: '{"command":"ls"}' }],
            ts,
          }),
        );
        out.push(JSON.stringify({ role: 'tool', toolCallId: `c${m}`, content: sentence(30, 80), ts }));
        toolLines += 2;
      }
      out.push(JSON.stringify({ role, content, ts }));
    }
    const text = `${out.join('\n')}\n`;
    bytes += text.length;
    writeFileSync(path.join(dir, 'sessions', `telegram_${1000 + s}.jsonl`), text);
  }
  return {
    notes,
    noteLines: lines,
    sessions,
    messagesPerSession: messages,
    textMessages: sessions * messages,
    toolLines,
    bytes,
  };
}

const round = (n: number) => Math.round(n * 10) / 10;

/**
 * The queries: 2-4 words drawn as often as they occur in the text (the same
 * Zipf law), so most are common words with thousands of matches to rank —
 * the costly kind — and some are rare names.
 */
function makeQueries(count: number): string[] {
  const random = generator(99);
  const { zipf } = textMaker(generator(16));
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const n = 2 + Math.floor(random() * 3);
    out.push(Array.from({ length: n }, zipf).join(' '));
  }
  return out;
}

/** Twenty notes to change one at a time. */
function updateNotes(notes: number): string[] {
  const random = generator(7);
  return Array.from({ length: 20 }, () => {
    const day = new Date(FIRST_DAY + Math.floor(random() * notes) * 86_400_000).toISOString().slice(0, 10);
    const ymd = day.replace(/-/g, '');
    return `memory/${ymd.slice(0, 6)}/${ymd}.md`;
  });
}

/** Emits dist/ with tsc when the index's compiled code is missing or older than its source. */
function compile(): void {
  const source = path.join(ROOT, 'src', 'memory', 'search');
  const compiled = path.join(ROOT, 'dist', 'memory', 'search', 'memory-index.js');
  const newest = Math.max(...readdirSync(source).map((f) => statSync(path.join(source, f)).mtimeMs));
  if (existsSync(compiled) && statSync(compiled).mtimeMs >= newest) return;
  try {
    execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'ignore' });
  } catch {
    // tsc exits non-zero on a type error anywhere in src/ but still emits; the check below decides.
  }
  if (!existsSync(compiled)) throw new Error('tsc produced no dist/memory/search/memory-index.js');
}

/** Runs the measuring child on the built dist/ and returns its JSON. */
async function inChild(
  mode: 'build' | 'worker',
  planFile: string,
  nodeOptions: string[],
): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, [...nodeOptions, '--expose-gc', CHILD, mode, planFile], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-bench-memory-'));
try {
  compile();
  const workspace = path.join(dir, 'workspace');
  const notes = Number(values.notes);
  const corpus = generateWorkspace(
    workspace,
    notes,
    Number(values.lines),
    Number(values.sessions),
    Number(values.messages),
  );
  const planFile = path.join(dir, 'plan.json');
  writeFileSync(
    planFile,
    JSON.stringify({
      dist: path.join(ROOT, 'dist'),
      workspace,
      state: path.join(dir, 'state'),
      timezone: TZ,
      queries: makeQueries(Number(values.queries)),
      updateNotes: updateNotes(notes),
      planted: { note: PLANTED_NOTE, session: 'telegram:1017' },
    }),
  );
  // Both run with a PM2 worker's node_args (ecosystem.config.js): workers build and search the index.
  const built = await inChild('build', planFile, WORKER_NODE_ARGS);
  const worker = await inChild('worker', planFile, WORKER_NODE_ARGS);
  const updateMs = built.updateMs as { median: number };
  const searchMs = built.searchMs as { p99: number };
  const targets = {
    buildMs: { value: built.buildMs, target: 5000, met: (built.buildMs as number) <= 5000 },
    updateMs: { value: updateMs.median, target: 50, met: updateMs.median <= 50 },
    searchP99Ms: { value: searchMs.p99, target: 50, met: searchMs.p99 <= 50 },
    workerRssGrowthMb: { value: worker.rssGrowthMb, target: 40, met: (worker.rssGrowthMb as number) <= 40 },
  };
  const { bytes, ...shape } = corpus;
  process.stdout.write(
    `${JSON.stringify(
      {
        corpus: { ...shape, textMb: round(bytes / 1024 / 1024) },
        machine: { cpus: os.cpus().length, load1: round(os.loadavg()[0]!), node: process.version },
        ...built,
        indexMb: round((built.indexBytes as number) / 1024 / 1024),
        worker,
        targets,
        allMet: Object.values(targets).every((t) => t.met),
      },
      null,
      2,
    )}\n`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
