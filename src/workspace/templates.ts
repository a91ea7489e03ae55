/**
 * Where the workspace templates live (the repository's `workspace/` folder)
 * and which of its files are templates rather than run-time state.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMissing } from './cached-file.js';

/**
 * The templates folder: `workspace/` at the package root. This file sits at
 * `src/workspace/` in a checkout and `dist/workspace/` once built, two levels
 * below the root either way.
 */
export function templatesDir(): string {
  return fileURLToPath(new URL('../../workspace/', import.meta.url));
}

/**
 * Template files under `dir`, as sorted relative paths with `/` separators:
 * top-level Markdown files, `memory/MEMORY.md` and everything under `skills/`.
 * Run-time state that may sit beside them (sessions, daily notes, Redis data) is left out.
 */
export async function listTemplateFiles(dir: string = templatesDir()): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdirOrEmpty(dir)) {
    if (entry.isFile() && entry.name.endsWith('.md')) out.push(entry.name);
  }
  for (const entry of await readdirOrEmpty(path.join(dir, 'memory'))) {
    if (entry.isFile() && entry.name === 'MEMORY.md') out.push('memory/MEMORY.md');
  }
  await walk(dir, 'skills', out);
  return out.sort();
}

async function walk(root: string, rel: string, out: string[]): Promise<void> {
  for (const entry of await readdirOrEmpty(path.join(root, rel))) {
    const child = `${rel}/${entry.name}`;
    if (entry.isDirectory()) await walk(root, child, out);
    else if (entry.isFile()) out.push(child);
  }
}

async function readdirOrEmpty(dir: string) {
  try {
    return await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (isMissing(err)) return [];
    throw err;
  }
}
