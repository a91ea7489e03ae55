/**
 * Records every module file a Node process loads: a load hook
 * (`module.registerHooks`) preloaded with `--import`, appending each `file:`
 * URL to the file named by the LOAD_LOG variable. For the tests that check
 * what a process loads (a worker's RSS, tracing off).
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const RECORDER = `import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
const log = process.env.LOAD_LOG;
registerHooks({
  load(url, context, nextLoad) {
    if (url.startsWith('file:')) appendFileSync(log, url + '\\n');
    return nextLoad(url, context);
  },
});
`;

/** Writes the hook into `dir`; returns its path, for `--import`. */
export async function writeLoadRecorder(dir: string): Promise<string> {
  const file = path.join(dir, 'recorder.mjs');
  await writeFile(file, RECORDER);
  return file;
}

/** The files a process recorded in `log` (none when it wrote nothing), the hook itself left out. */
export async function loadedFiles(log: string): Promise<string[]> {
  const text = await readFile(log, 'utf8').catch(() => '');
  return text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((url) => fileURLToPath(url))
    .filter((f) => !f.endsWith('recorder.mjs'));
}
