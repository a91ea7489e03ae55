/** The skills loader never blocks on a FIFO named SKILL.md (one in a skill folder made by exec, say). */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SkillsLoader } from '../../../src/skills/loader.js';

describe('SkillsLoader and special files', () => {
  let dir: string;
  const fifos: string[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'magpie-skills-fifo-'));
  });
  afterEach(async () => {
    // Should a regression leave a read blocked on a FIFO, a writer end releases it.
    for (const fifo of fifos.splice(0)) closeSync(openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK));
    await rm(dir, { recursive: true, force: true });
  });

  it('skips FIFOs named SKILL.md at once, even four of them, and loads the real skills', async () => {
    for (const name of ['pipe-a', 'pipe-b', 'pipe-c', 'pipe-d']) {
      await mkdir(path.join(dir, name));
      const fifo = path.join(dir, name, 'SKILL.md');
      execFileSync('mkfifo', [fifo]);
      fifos.push(fifo);
    }
    await mkdir(path.join(dir, 'real'));
    await writeFile(
      path.join(dir, 'real', 'SKILL.md'),
      '---\nname: real\ndescription: A real skill\n---\nDo it.\n',
    );
    const loader = new SkillsLoader({ dir });
    const started = performance.now();
    const { skills, errors } = await loader.load();
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(skills.map((s) => s.name)).toEqual(['real']);
    expect(errors).toEqual([]);
  });
});
