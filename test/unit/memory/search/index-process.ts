/**
 * A separate process using the memory index, for the concurrency tests (not
 * a test file itself).
 *
 *   node --import tsx index-process.ts churn <workspace> <state> <tag> <rounds>
 *     appends a line with a word of its own to a note and to its session log,
 *     updates the index (even rounds) and searches for the word, which must be
 *     found in both places, `rounds` times; warnings go to stderr;
 *   node --import tsx index-process.ts rebuild <workspace> <state>
 *     rebuilds the index from every file (the test kills it midway).
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { createLogger } from '../../../../src/log/index.js';
import { MemoryIndex } from '../../../../src/memory/search/memory-index.js';

const [mode, workspace, state, tag, rounds] = process.argv.slice(2);
// Warnings (an index found unusable and rebuilt) go to stderr, which the tests expect empty.
const logger = createLogger({ level: 'warn' });
const index = new MemoryIndex({ workspace: workspace!, stateDir: state!, timezone: 'Europe/Lisbon', logger });

if (mode === 'churn') {
  for (let i = 0; i < Number(rounds); i++) {
    const day = String((i % 5) + 1).padStart(2, '0');
    mkdirSync(path.join(workspace!, 'memory', '202406'), { recursive: true });
    appendFileSync(path.join(workspace!, 'memory', '202406', `202406${day}.md`), `- ${tag}w${i} noted\n`);
    const ts = new Date(Date.UTC(2024, 5, 1, 10, 0, i)).toISOString();
    appendFileSync(
      path.join(workspace!, 'sessions', `cli_${tag}.jsonl`),
      `${JSON.stringify({ role: 'user', content: `${tag}w${i} said`, ts })}\n`,
    );
    if (i % 2 === 0) await index.update();
    // What this process just wrote is found at once, whatever the other process is doing.
    const { hits } = await index.search(`${tag}w${i}`);
    if (hits.length !== 2) throw new Error(`${tag}w${i}: ${hits.length} hits instead of 2`);
  }
  process.stdout.write('done\n');
} else if (mode === 'rebuild') {
  await index.reindex();
  process.stdout.write('rebuilt\n');
}
