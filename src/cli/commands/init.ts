/** `magpie init [--workspace DIR]`: create the workspace from the templates, never overwriting. */
import path from 'node:path';
import { loadConfig } from '../../app/config.js';
import { ExitCode } from '../../errors/index.js';
import { ensureWorkspaceId, WORKSPACE_ID_FILE } from '../../workspace/identity.js';
import { initWorkspace, isTemplatesDir } from '../../workspace/init.js';
import { templatesDir } from '../../workspace/templates.js';
import { type CommandIO, defineCommand } from '../command.js';

const HELP = `usage: magpie init [--workspace DIR]

Creates the workspace (MAGPIE_WORKSPACE, default ./workspace) from the templates:
AGENTS.md, SOUL.md, USER.md, IDENTITY.md, HEARTBEAT.md, memory/MEMORY.md and the
example skills, and .magpie-id, the workspace's id (every worker and gateway on
one bus must use the workspace with this id). Files that already exist are kept
as they are.

options:
  -w, --workspace DIR  create the workspace here instead of MAGPIE_WORKSPACE
  -h, --help           show this help`;

/** Where the command writes and the templates it copies; tests pass their own. */
export interface InitIO extends CommandIO {
  /** The templates folder. @defaultValue the package's `workspace/` */
  templates?: string;
}

/** The command; tests pass their own output. */
export const runInit = defineCommand({
  name: 'init',
  help: HELP,
  flags: { workspace: { type: 'string', short: 'w' } },
  async run({ values }, io: InitIO) {
    const target = values.workspace ? path.resolve(values.workspace) : loadConfig().workspace;
    const templates = io.templates ?? templatesDir();
    if (await isTemplatesDir(target, templates)) {
      io.out.write(`${target} is the templates folder itself: the templates are already there.\n`);
      return ExitCode.ok;
    }
    const { created, kept } = await initWorkspace(target, { templates });
    const identity = await ensureWorkspaceId(target);
    const lines = [`Workspace: ${target}`];
    for (const rel of created) lines.push(`  created  ${rel}`);
    for (const rel of kept) lines.push(`  kept     ${rel} (already there)`);
    lines.push(
      identity.created
        ? `  created  ${WORKSPACE_ID_FILE} (workspace id ${identity.id})`
        : `  kept     ${WORKSPACE_ID_FILE} (workspace id ${identity.id})`,
    );
    if (created.length === 0) lines.push('Nothing to do: every template file was already there.');
    else lines.push('Next: tell magpie about yourself in USER.md, then try: magpie agent -m "hello"');
    io.out.write(`${lines.join('\n')}\n`);
    return ExitCode.ok;
  },
});

/** The command as `magpie init` runs it (output on stdout). */
export const run = runInit;
