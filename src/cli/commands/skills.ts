/** `magpie skills [--workspace DIR]`: list the workspace's skills and report malformed ones. */
import path from 'node:path';
import { loadConfig } from '../../app/config.js';
import { ExitCode } from '../../errors/index.js';
import { SkillsLoader } from '../../skills/loader.js';
import { defineCommand } from '../command.js';

const HELP = `usage: magpie skills [--workspace DIR]

Lists the skills in <workspace>/skills/<name>/SKILL.md: name, whether it is always
in the prompt or loaded on demand, and its description. Malformed skills are listed
with the reason; the exit code is 1 when there is any.

options:
  -w, --workspace DIR  use this workspace instead of MAGPIE_WORKSPACE
  -h, --help           show this help`;

/** The command; tests pass their own output. */
export const runSkills = defineCommand({
  name: 'skills',
  help: HELP,
  flags: { workspace: { type: 'string', short: 'w' } },
  async run({ values }, io) {
    const workspace = values.workspace ? path.resolve(values.workspace) : loadConfig().workspace;
    const dir = path.join(workspace, 'skills');
    const { skills, errors } = await new SkillsLoader({ dir }).load();
    const lines: string[] = [];
    if (skills.length === 0) lines.push(`No skills in ${dir}.`);
    else {
      lines.push(`Skills in ${dir}:`);
      const width = Math.max(...skills.map((s) => s.name.length));
      for (const s of skills) {
        lines.push(`  ${s.name.padEnd(width)}  ${s.always ? 'always   ' : 'on-demand'}  ${s.description}`);
      }
    }
    if (errors.length > 0) {
      lines.push('', `Malformed (${errors.length}):`);
      for (const e of errors) lines.push(`  ${path.relative(workspace, e.path)}: ${e.message}`);
    }
    io.out.write(`${lines.join('\n')}\n`);
    return errors.length > 0 ? ExitCode.failure : ExitCode.ok;
  },
});

/** The command as `magpie skills` runs it (output on stdout). */
export const run = runSkills;
