/**
 * The workspace copy while files change underneath: a file rewritten over and
 * over during the copy is copied as one whole version (or the copy fails with
 * one line saying it kept changing), never as a torn mix of two; links are
 * not followed; the manifest entries match what was written.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { copyStable } from '../../../src/backup/copy-files.js';
import { AppError } from '../../../src/errors/index.js';
import { tempDirPerTest } from '../../fakes/workspace.js';

describe('copyStable', () => {
  let dir = '';
  tempDirPerTest((d) => {
    dir = d;
  });

  it('copies regular files with their sizes and sha256, skipping links and skipped paths', async () => {
    const from = path.join(dir, 'ws');
    mkdirSync(path.join(from, 'memory'), { recursive: true });
    mkdirSync(path.join(from, '.redis'));
    writeFileSync(path.join(from, 'memory', 'MEMORY.md'), 'fact\n');
    writeFileSync(path.join(from, '.redis', 'dump.rdb'), 'x');
    writeFileSync(path.join(dir, 'secret'), 'outside');
    symlinkSync(path.join(dir, 'secret'), path.join(from, 'link'));
    const staging = path.join(dir, 'staging');
    const entries = await copyStable({ from, staging, under: 'workspace', skip: (r) => r === '.redis' });
    expect(entries).toEqual([
      {
        path: 'workspace/memory/MEMORY.md',
        size: 5,
        sha256: createHash('sha256').update('fact\n').digest('hex'),
      },
    ]);
    expect(readFileSync(path.join(staging, 'workspace', 'memory', 'MEMORY.md'), 'utf8')).toBe('fact\n');
  });

  it('copies a file rewritten during the copy as one whole version, never a torn mix', async () => {
    const from = path.join(dir, 'ws');
    mkdirSync(from);
    const file = path.join(from, 'session.jsonl');
    const versions = [Buffer.alloc(4 << 20, 'a'), Buffer.alloc(3 << 20, 'b')];
    writeFileSync(file, versions[0] as Buffer);
    let writes = 0;
    let stop = false;
    const writer = (async () => {
      while (!stop) {
        writeFileSync(file, versions[writes++ % 2] as Buffer);
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const copies: Buffer[] = [];
    const refusals: string[] = [];
    for (let i = 0; i < 5; i++) {
      const staging = path.join(dir, `staging-${i}`);
      try {
        await copyStable({ from, staging, under: 'workspace' });
        copies.push(readFileSync(path.join(staging, 'workspace', 'session.jsonl')));
      } catch (err) {
        expect(err).toBeInstanceOf(AppError);
        refusals.push((err as AppError).message);
      }
    }
    stop = true;
    await writer;
    expect(writes).toBeGreaterThan(0);
    for (const copy of copies) expect(versions.some((v) => v.equals(copy))).toBe(true);
    for (const line of refusals)
      expect(line).toMatch(/session\.jsonl kept changing while it was read \(5 tries\)/);
    expect(copies.length + refusals.length).toBe(5);
  });
});
