/**
 * Benchmark: does memory search find a fact asked about in other words?
 * Generates, deterministically, 1,000 daily notes with 200 planted facts and
 * 200 questions that paraphrase them (a fact "Skoda estate … march", its
 * question "what about the car in spring?"; a quarter of the questions keep
 * one of the fact's own words, as people sometimes do), and prints recall@5
 * of keyword search (BM25) alone and of hybrid search (BM25 + vectors by
 * RRF), side by side, naming the embedding endpoint. Then it times the
 * vector half alone (the exact cosine scan) on corpora of growing size, to
 * find the largest one it serves within the search target (p99 ≤ 50 ms for
 * a whole search, see bench/memory-search.ts).
 *
 *   npx tsx bench/recall.ts [--embedding-url URL --embedding-model NAME [--embedding-key-env VAR]]
 *
 * Default endpoint: the test stand-in (test/fakes/embedding-server.ts), whose
 * "meaning" is the same concept table the paraphrases come from, so its
 * hybrid figure measures the plumbing (embedding, caching, fusion), not a
 * real model's grasp of paraphrase.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createSchema, openIndexDatabase } from '../src/memory/search/database.js';
import { MemoryIndex } from '../src/memory/search/memory-index.js';
import { nearestPassages } from '../src/memory/search/vectors.js';
import { normalized } from '../src/providers/embedder.js';
import { OpenAIEmbedder } from '../src/providers/openai/embeddings.js';
import { CONCEPTS, type Concept } from '../test/fakes/embedding-concepts.js';
import { startFakeEmbeddings } from '../test/fakes/embedding-server.js';

const { values } = parseArgs({
  options: {
    'embedding-url': { type: 'string' },
    'embedding-model': { type: 'string' },
    'embedding-key-env': { type: 'string' },
    notes: { type: 'string', default: '1000' },
    'scan-runs': { type: 'string', default: '15' },
    'scan-only': { type: 'boolean', default: false },
  },
});
const NOTES = Number(values.notes);
const FACTS = 200;
const TZ = 'UTC';

/** mulberry32: the same notes and questions on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = random(30);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;

/** Everyday words that belong to no concept. */
const FILLER = (
  'meeting weather kitchen window garden-gate paint letter parcel station market lunch dinner breakfast tea ' +
  'rain sunshine cloudy cold warm office email call message friend cousin aunt uncle colleague teacher ' +
  'chair table lamp shelf curtains carpet sofa towel soap laundry ironing dishes oven fridge kettle ' +
  'bus tram ticket queue bridge river park bench square museum library cinema theatre concert gallery ' +
  'recipe soup salad pasta rice cheese apples oranges lemons onions garlic pepper salt sugar butter ' +
  'plan list note idea question answer problem reminder appointment schedule deadline report invoice ' +
  'morning afternoon evening tonight yesterday tomorrow later early late quick slow busy quiet long short ' +
  'walked talked waited called wrote fixed cleaned cooked visited watched listened planned finished started'
).split(' ');
const filler = (n: number) => Array.from({ length: n }, () => pick(FILLER)).join(' ');
const QUESTION_STARTS = [
  'what about the',
  'remind me of the',
  'anything on the',
  'tell me about my',
  'what did I note on the',
];

const subjects = CONCEPTS.filter((c) => c.kind === 'subject');
const details = CONCEPTS.filter((c) => c.kind === 'detail');

interface Fact {
  note: string;
  question: string;
  literal: boolean;
}

/** Writes the notes; returns the planted facts with their questions. */
function writeCorpus(ws: string): Fact[] {
  const pairs = subjects.flatMap((s) => details.map((d) => [s, d] as [Concept, Concept]));
  const facts: Fact[] = [];
  const step = Math.floor(NOTES / FACTS);
  for (let i = 0; i < NOTES; i++) {
    const date = new Date(Date.UTC(2022, 0, 1) + i * 86_400_000).toISOString().slice(0, 10);
    const ymd = date.replace(/-/g, '');
    const rel = `memory/${ymd.slice(0, 6)}/${ymd}.md`;
    const lines = [`- ${filler(6)}.`, `- ${filler(5)}.`];
    const planted = i % step === 0 && facts.length < FACTS ? pairs[facts.length] : undefined;
    if (planted) {
      const [s, d] = planted;
      lines.push(`- ${pick(s.fact)} ${filler(2)} ${pick(s.fact)} ${pick(d.fact)} ${filler(2)}.`);
      const literal = rand() < 0.25;
      const subjectWord = literal ? pick(s.fact) : pick(s.ask);
      facts.push({ note: rel, question: `${pick(QUESTION_STARTS)} ${subjectWord} ${pick(d.ask)}?`, literal });
    } else if (rand() < 0.8) {
      lines.push(`- ${pick(pick(CONCEPTS).fact)} ${filler(4)}.`);
    }
    lines.push(`- ${filler(4)}.`);
    mkdirSync(path.join(ws, 'memory', ymd.slice(0, 6)), { recursive: true });
    writeFileSync(path.join(ws, rel), `# ${date}\n\n${lines.join('\n')}\n`);
  }
  return facts;
}

async function recallAt5(
  index: MemoryIndex,
  facts: Fact[],
): Promise<{ all: number; literal: number; paraphrase: number; keywordOnly?: string }> {
  let found = 0;
  let foundLiteral = 0;
  let keywordOnly: string | undefined;
  for (const fact of facts) {
    const result = await index.search(fact.question, { limit: 5 });
    keywordOnly ??= result.keywordOnly;
    if (result.hits.some((h) => h.path === fact.note)) {
      found += 1;
      if (fact.literal) foundLiteral += 1;
    }
  }
  const literals = facts.filter((f) => f.literal).length;
  const round = (n: number) => Math.round(n * 1000) / 1000;
  return {
    all: round(found / facts.length),
    literal: round(foundLiteral / literals),
    paraphrase: round((found - foundLiteral) / (facts.length - literals)),
    ...(keywordOnly ? { keywordOnly } : {}),
  };
}

/** p50/p99 of the exact scan over `count` random vectors of `dimensions`. */
function timeScan(
  dir: string,
  count: number,
  dimensions: number,
  runs: number,
): { p50: number; p99: number; cpuP50: number; cpuP99: number } {
  const file = path.join(dir, `scan-${count}-${dimensions}.db`);
  const { db } = openIndexDatabase(file, { workspace: dir, timezone: TZ });
  try {
    db.exec('BEGIN');
    createSchema(db, { workspace: dir, timezone: TZ });
    const chunk = db.prepare(
      "INSERT INTO chunk (source_id, line, heading, body, hash) VALUES (1, 1, '', '', ?)",
    );
    const vec = db.prepare("INSERT INTO embedding (model, hash, vector) VALUES ('m', ?, ?)");
    const gauss = () => rand() - 0.5;
    for (let i = 0; i < count; i++) {
      const hash = new Uint8Array(32);
      new DataView(hash.buffer).setUint32(0, i);
      chunk.run([hash]);
      const v = normalized(Array.from({ length: dimensions }, gauss));
      vec.run([hash, new Uint8Array(v.buffer)]);
    }
    db.exec('COMMIT');
    const times: number[] = [];
    const cpu: number[] = [];
    for (let r = 0; r < runs; r++) {
      const q = normalized(Array.from({ length: dimensions }, gauss));
      const started = performance.now();
      const cpuStart = process.cpuUsage();
      nearestPassages(db, 'm', q, 30);
      const used = process.cpuUsage(cpuStart);
      times.push(performance.now() - started);
      cpu.push((used.user + used.system) / 1000);
    }
    const at = (xs: number[], p: number) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]! * 10) / 10;
    };
    return { p50: at(times, 0.5), p99: at(times, 0.99), cpuP50: at(cpu, 0.5), cpuP99: at(cpu, 0.99) };
  } finally {
    db.close();
    rmSync(file, { force: true });
    rmSync(`${file}-wal`, { force: true });
  }
}

/** Recall@5 of keywords alone, then (every passage embedded first) of hybrid search. */
async function measureRecall(
  options: { workspace: string; stateDir: string; timezone: string },
  embedder: OpenAIEmbedder,
  facts: Fact[],
) {
  const keyword = await recallAt5(new MemoryIndex(options), facts);
  const hybridIndex = new MemoryIndex({
    ...options,
    embedder,
    embedAfterSearch: false,
    queryTimeoutMs: 10_000,
  });
  const started = performance.now();
  const embedded = await hybridIndex.embedPending();
  const ms = Math.round(performance.now() - started);
  const hybrid = await recallAt5(hybridIndex, facts);
  return { recallAt5: { bm25: keyword, hybrid }, embedding: { ...embedded, ms } };
}

async function main(): Promise<void> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'magpie-recall-'));
  const standIn = values['embedding-url'] ? undefined : await startFakeEmbeddings();
  try {
    const ws = path.join(root, 'ws');
    const facts = writeCorpus(ws);
    const baseURL = values['embedding-url'] ?? standIn!.baseURL;
    const model = values['embedding-model'] ?? 'stand-in-embed';
    const keyVar = values['embedding-key-env'];
    const embedder = new OpenAIEmbedder({
      apiKey: keyVar ? process.env[keyVar] : undefined,
      baseURL,
      model,
      timeoutMs: 60_000,
    });
    const options = { workspace: ws, stateDir: path.join(root, 'state'), timezone: TZ };
    const recall = values['scan-only'] ? undefined : await measureRecall(options, embedder, facts);
    const runs = Number(values['scan-runs']);
    const scan: Record<string, ReturnType<typeof timeScan>> = {};
    for (const [dimensions, counts] of [
      [256, [5_000, 10_000, 20_000]],
      [768, [2_000, 5_000, 10_000, 20_000]],
      [1536, [2_000, 5_000, 10_000, 20_000]],
    ] as const) {
      for (const count of counts) scan[`${count}x${dimensions}`] = timeScan(root, count, dimensions, runs);
    }
    console.log(
      JSON.stringify(
        {
          corpus: {
            notes: NOTES,
            facts: facts.length,
            literalQuestions: facts.filter((f) => f.literal).length,
          },
          endpoint: {
            model,
            url: standIn ? 'the test stand-in (concept table; measures the plumbing, not a model)' : baseURL,
          },
          ...recall,
          vectorScanMs: scan,
          machine: {
            cpus: os.cpus().length,
            load1: Math.round(os.loadavg()[0]! * 100) / 100,
            node: process.version,
          },
        },
        null,
        2,
      ),
    );
  } finally {
    await standIn?.close();
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
