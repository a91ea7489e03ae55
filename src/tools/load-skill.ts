/**
 * load_skill: returns the procedure (Markdown body) of an on-demand skill
 * listed in the system prompt. The loader re-reads a SKILL.md when its mtime
 * or size changes, so edits are picked up without a restart.
 */
import { z } from 'zod';
import type { SkillsLoader } from '../skills/loader.js';
import { fail, ok, type Tool } from './types.js';

const parameters = z.object({
  name: z.string().min(1).describe('The skill name as listed under "Skills available on demand"'),
});

/** The load_skill tool over one workspace's skills. */
export function createLoadSkillTool(skills: Pick<SkillsLoader, 'load'>): Tool<typeof parameters> {
  return {
    name: 'load_skill',
    description:
      'Load the full procedure of a skill listed in the system prompt (by name) before following it.',
    parameters,
    async execute({ name }) {
      const { skills: all, errors } = await skills.load();
      const skill = all.find((s) => s.name === name.trim());
      if (skill) return ok(`# Skill: ${skill.name}\n\n${skill.body}`);
      const broken = errors.find((e) => e.path.split(/[\\/]/).at(-2) === name.trim());
      if (broken) return fail(`skill ${name} is malformed: ${broken.message}`);
      const names = all.map((s) => s.name).join(', ') || '(none)';
      return fail(`no skill named ${name}; available: ${names}`);
    },
  };
}
