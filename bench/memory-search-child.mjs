/**
 * The process side of bench/memory-search.ts: plain Node on the built
 * dist/ (no TypeScript loader in the measured process), so its RSS is what a
 * worker's would be. Prints one JSON line.
 *
 *   node --expose-gc bench/memory-search-child.mjs build|worker <plan.json>
 *
 * `build`: the index from nothing, twenty one-note updates, the planted
 * facts, then every query. `worker`: a fresh process loading the built index
 * and running every query, as a worker answering memory_search.
 */
import { appendFileSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [mode, planFile] = process.argv.slice(2);
const plan = JSON.parse(readFileSync(planFile, 'utf8'));
const { MemoryIndex } = await import(
  pathToFileURL(path.join(plan.dist, 'memory', 'search', 'memory-index.js')).href
);

const round = (n) => Math.round(n * 10) / 10;
const mb = (bytes) => round(bytes / 1024 / 1024);
const percentile = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const cpuMs = (since) => {
  const { user, system } = process.cpuUsage(since);
  return (user + system) / 1000;
};

function rssAfterGc() {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().rss;
}

/** Wall and CPU milliseconds of `work`. */
async function timed(work) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const value = await work();
  return { value, wall: performance.now() - started, cpu: cpuMs(cpu) };
}

function summary(samples) {
  const wall = samples.map((s) => s.wall).sort((a, b) => a - b);
  const cpu = samples.map((s) => s.cpu).sort((a, b) => a - b);
  return {
    p50: round(percentile(wall, 50)),
    p99: round(percentile(wall, 99)),
    max: round(wall.at(-1)),
    cpuP50: round(percentile(cpu, 50)),
    cpuP99: round(percentile(cpu, 99)),
  };
}

const baseline = rssAfterGc();
const index = new MemoryIndex({ workspace: plan.workspace, stateDir: plan.state, timezone: plan.timezone });

if (mode === 'build') {
  const build = await timed(() => index.update());
  const rssAfterBuild = rssAfterGc();
  const updates = [];
  for (const [i, note] of plan.updateNotes.entries()) {
    appendFileSync(path.join(plan.workspace, note), `- 23:59 update number ${i}\n`);
    const update = await timed(() => index.update());
    if (update.value.read !== 1)
      throw new Error(`an update after one change read ${update.value.read} files`);
    updates.push(update);
  }
  const marta = await index.search('when did Marta move to Coimbra');
  if (marta.hits[0]?.path !== plan.planted.note) throw new Error('the planted note was not found first');
  const plumber = await index.search("plumber's number");
  if (!plumber.hits.some((h) => h.session === plan.planted.session))
    throw new Error('the planted message was not found');
  const searches = [];
  for (const q of plan.queries) searches.push(await timed(() => index.search(q)));
  const updateSummary = summary(updates);
  process.stdout.write(
    `${JSON.stringify({
      buildMs: round(build.wall),
      buildCpuMs: round(build.cpu),
      chunks: build.value.totalChunks,
      updateMs: { median: updateSummary.p50, max: updateSummary.max, cpuMedian: updateSummary.cpuP50 },
      searchMs: summary(searches),
      indexBytes: statSync(index.dbPath).size,
      rssGrowthAfterBuildMb: mb(rssAfterBuild - baseline),
    })}\n`,
  );
} else {
  const [first, ...rest] = plan.queries;
  await index.search(first);
  const rssFirst = rssAfterGc();
  for (const q of rest) await index.search(q);
  const rssAfter = rssAfterGc();
  process.stdout.write(
    `${JSON.stringify({
      baselineMb: mb(baseline),
      rssGrowthFirstSearchMb: mb(rssFirst - baseline),
      rssGrowthMb: mb(rssAfter - baseline),
      searches: plan.queries.length,
    })}\n`,
  );
}
