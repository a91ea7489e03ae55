import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runInit } from '../../../src/cli/commands/init.js';
import { runSkills } from '../../../src/cli/commands/skills.js';
import { hasContent } from '../../../src/memory/store.js';
import { SkillsLoader } from '../../../src/skills/loader.js';
import { initWorkspace } from '../../../src/workspace/init.js';
import { listTemplateFiles, templatesDir } from '../../../src/workspace/templates.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
let tmp: string;

function output() {
  const chunks: string[] = [];
  return { out: { write: (text: string) => chunks.push(text) }, text: () => chunks.join('') };
}

beforeEach(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'magpie-init-'));
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('workspace templates', () => {
  it('are found in the repository workspace folder', () => {
    expect(templatesDir()).toBe(path.join(repoRoot, 'workspace') + path.sep);
  });

  it('hold every file the design names, an example skill, and no heartbeat tasks', async () => {
    const files = await listTemplateFiles();
    for (const name of [
      'AGENTS.md',
      'SOUL.md',
      'USER.md',
      'IDENTITY.md',
      'HEARTBEAT.md',
      'memory/MEMORY.md',
    ]) {
      expect(files).toContain(name);
    }
    const { skills, errors } = await new SkillsLoader({ dir: path.join(templatesDir(), 'skills') }).load();
    expect(errors).toEqual([]);
    expect(skills.length).toBeGreaterThan(0);
    expect(hasContent(await readFile(path.join(templatesDir(), 'HEARTBEAT.md'), 'utf8'))).toBe(false);
    expect(hasContent(await readFile(path.join(templatesDir(), 'memory', 'MEMORY.md'), 'utf8'))).toBe(false);
    expect(await readFile(path.join(templatesDir(), 'IDENTITY.md'), 'utf8')).toMatch(/Name: magpie/);
  });

  it('leave run-time state out of the list', async () => {
    const src = path.join(tmp, 'templates');
    for (const rel of [
      'AGENTS.md',
      'memory/MEMORY.md',
      'memory/202611/20261122.md',
      'sessions/cli_x.jsonl',
      'skills/a/SKILL.md',
      'notes.txt',
    ]) {
      await mkdir(path.dirname(path.join(src, rel)), { recursive: true });
      await writeFile(path.join(src, rel), rel);
    }
    expect(await listTemplateFiles(src)).toEqual(['AGENTS.md', 'memory/MEMORY.md', 'skills/a/SKILL.md']);
  });
});

describe('initWorkspace', () => {
  it('copies every template, then keeps them all on a second run', async () => {
    const target = path.join(tmp, 'ws');
    const first = await initWorkspace(target);
    const templates = await listTemplateFiles();
    expect(first).toEqual({ created: templates, kept: [] });
    for (const rel of templates) {
      expect(await readFile(path.join(target, rel), 'utf8')).toBe(
        await readFile(path.join(templatesDir(), rel), 'utf8'),
      );
    }
    expect(await initWorkspace(target)).toEqual({ created: [], kept: templates });
  });

  it('never overwrites a file the user changed', async () => {
    const target = path.join(tmp, 'ws');
    await mkdir(target);
    await writeFile(path.join(target, 'USER.md'), 'I am Ana');
    const { created, kept } = await initWorkspace(target);
    expect(kept).toEqual(['USER.md']);
    expect(created).toContain('AGENTS.md');
    expect(await readFile(path.join(target, 'USER.md'), 'utf8')).toBe('I am Ana');
  });
});

describe('initWorkspace errors', () => {
  it('gives WORKSPACE_MISSING with the path when the folder cannot be created', async () => {
    const blocker = path.join(tmp, 'file');
    await writeFile(blocker, 'not a folder');
    await expect(initWorkspace(path.join(blocker, 'ws'))).rejects.toMatchObject({
      code: 'WORKSPACE_MISSING',
      message: expect.stringContaining(path.join(blocker, 'ws')),
    });
  });
});

describe('magpie init', () => {
  it('creates the workspace given by --workspace and prints what it created and kept', async () => {
    const target = path.join(tmp, 'ws');
    await mkdir(target);
    await writeFile(path.join(target, 'SOUL.md'), 'mine');
    const io = output();
    expect(await runInit(['--workspace', target], io)).toBe(0);
    expect(io.text()).toContain(`Workspace: ${target}`);
    expect(io.text()).toMatch(/created +AGENTS\.md/);
    expect(io.text()).toMatch(/kept +SOUL\.md \(already there\)/);
  });

  it('says the templates are already there when the target is the template folder', async () => {
    const io = output();
    expect(await runInit(['--workspace', templatesDir()], io)).toBe(0);
    expect(io.text()).toMatch(/templates folder itself/);
  });

  it('refuses unknown flags with a config error', async () => {
    await expect(runInit(['--nope'], output())).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      exitCode: 2,
    });
  });
});

describe('magpie skills', () => {
  it('lists skills with always/on-demand and exits 0 when all are well-formed', async () => {
    await initWorkspace(tmp);
    const io = output();
    expect(await runSkills(['--workspace', tmp], io)).toBe(0);
    expect(io.text()).toMatch(/daily-briefing +on-demand +Morning briefing/);
  });

  it('reports malformed skills with their reason and exits 1', async () => {
    await mkdir(path.join(tmp, 'skills', 'broken'), { recursive: true });
    await writeFile(path.join(tmp, 'skills', 'broken', 'SKILL.md'), '---\nname: broken\n---\n');
    const io = output();
    expect(await runSkills(['-w', tmp], io)).toBe(1);
    expect(io.text()).toContain(`No skills in ${path.join(tmp, 'skills')}.`);
    expect(io.text()).toContain('skills/broken/SKILL.md: description is required');
  });
});
