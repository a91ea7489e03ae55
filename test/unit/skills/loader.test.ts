import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SkillsLoader } from '../../../src/skills/loader.js';

let dir: string;

async function skill(folder: string, text: string): Promise<string> {
  const file = path.join(dir, folder, 'SKILL.md');
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
  return file;
}

beforeEach(async () => {
  dir = path.join(await mkdtemp(path.join(tmpdir(), 'magpie-skills-')), 'skills');
  await mkdir(dir);
});
afterEach(async () => {
  await rm(path.dirname(dir), { recursive: true, force: true });
});

describe('SkillsLoader', () => {
  it('loads always and on-demand skills with their bodies, sorted by name', async () => {
    await skill(
      'weather',
      '---\nname: weather\ndescription: Look up the weather\n---\n\n# Weather\nSteps.\n',
    );
    await skill(
      'ack',
      '---\nname: ack\ndescription: "Say: got it"\nalways: true\n---\nAlways acknowledge.\n',
    );
    const { skills, errors } = await new SkillsLoader({ dir }).load();
    expect(errors).toEqual([]);
    expect(skills.map((s) => [s.name, s.always])).toEqual([
      ['ack', true],
      ['weather', false],
    ]);
    expect(skills[0]!.description).toBe('Say: got it');
    expect(skills[1]!.body).toBe('# Weather\nSteps.');
    expect(skills[1]!.path).toBe(path.join(dir, 'weather', 'SKILL.md'));
  });

  it('reports malformed skills with a clear reason instead of throwing', async () => {
    await skill('good', '---\nname: good\ndescription: fine\n---\nbody');
    await skill('nofront', '# Just markdown\n');
    await skill('badyaml', '---\nname: badyaml\ndescription: [unclosed\n---\n');
    await skill('Bad_Name', '---\nname: Bad_Name\ndescription: x\n---\n');
    await skill('nodesc', '---\nname: nodesc\n---\n');
    await skill('other', '---\nname: mismatch\ndescription: x\n---\n');
    await skill('alwaysword', '---\nname: alwaysword\ndescription: x\nalways: sometimes\n---\n');
    await skill('list', '---\n- a\n- b\n---\n');
    const { skills, errors } = await new SkillsLoader({ dir }).load();
    expect(skills.map((s) => s.name)).toEqual(['good']);
    const reason = (folder: string) =>
      errors.find((e) => e.path === path.join(dir, folder, 'SKILL.md'))?.message;
    expect(errors).toHaveLength(7);
    expect(reason('nofront')).toMatch(/no front matter/);
    expect(reason('badyaml')).toMatch(/not valid YAML/);
    expect(reason('Bad_Name')).toMatch(/lower-case letters, digits and dashes/);
    expect(reason('nodesc')).toMatch(/description is required/);
    expect(reason('other')).toMatch(/does not match its folder/);
    expect(reason('alwaysword')).toMatch(/always must be true or false/);
    expect(reason('list')).toMatch(/YAML mapping/);
  });

  it('picks up a changed file and does not re-parse unchanged ones', async () => {
    const file = await skill('notes', '---\nname: notes\ndescription: first\n---\nv1');
    await skill('other', '---\nname: other\ndescription: stays\n---\n');
    const loader = new SkillsLoader({ dir });
    await loader.load();
    expect(loader.parses).toBe(2);
    await loader.load();
    expect(loader.parses).toBe(2);

    await writeFile(file, '---\nname: notes\ndescription: second version\n---\nv2');
    const later = new Date(Date.now() + 5_000);
    await utimes(file, later, later);
    const { skills } = await loader.load();
    expect(loader.parses).toBe(3);
    expect(skills.find((s) => s.name === 'notes')?.description).toBe('second version');
  });

  it('serves the cached skill while the file is unchanged (same mtime and size)', async () => {
    const file = await skill('notes', '---\nname: notes\ndescription: aaaa\n---\n');
    const fixed = new Date('2026-01-01T00:00:00Z');
    await utimes(file, fixed, fixed);
    const loader = new SkillsLoader({ dir });
    await loader.load();
    await writeFile(file, '---\nname: notes\ndescription: bbbb\n---\n');
    await utimes(file, fixed, fixed);
    expect((await loader.get('notes'))?.description).toBe('aaaa');
  });

  it('forgets removed skills and finds skills by name', async () => {
    await skill('gone', '---\nname: gone\ndescription: x\n---\n');
    const loader = new SkillsLoader({ dir });
    expect((await loader.get('gone'))?.name).toBe('gone');
    await rm(path.join(dir, 'gone'), { recursive: true });
    expect(await loader.get('gone')).toBeUndefined();
    expect(await loader.get('../etc')).toBeUndefined();
  });

  it('treats a missing skills folder as no skills', async () => {
    const loader = new SkillsLoader({ dir: path.join(dir, 'nope') });
    expect(await loader.load()).toEqual({ skills: [], errors: [] });
  });
});

describe('SkillsLoader messages', () => {
  it('says when a field has the wrong type rather than calling it missing', async () => {
    await skill('num', '---\nname: num\ndescription: 42\n---\n');
    const { errors } = await new SkillsLoader({ dir }).load();
    expect(errors[0]?.message).toBe('description must be text');
  });
});
