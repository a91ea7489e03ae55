/**
 * `magpie doctor`'s checks of the workspace folder: it exists and is
 * writable, and the bootstrap files `magpie init` makes are there.
 */
import { access, constants, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config/index.js';
import { describeError } from '../errors/index.js';
import { listTemplateFiles, templatesDir } from '../workspace/templates.js';
import { type Check, failed, pass } from './doctor.js';

/** The command that makes (or completes) the workspace. */
function initHint(config: Config): string {
  return `magpie init --workspace ${config.workspace}`;
}

/** The workspace folder exists and magpie can write in it. */
export function workspaceCheck(config: Config): Check {
  return {
    name: 'workspace',
    async run() {
      const exists = await stat(config.workspace).then(
        (s) => s.isDirectory(),
        () => false,
      );
      if (!exists) return failed(`${config.workspace} does not exist`, initHint(config));
      const probe = path.join(config.workspace, `.doctor-${process.pid}`);
      try {
        await writeFile(probe, 'ok');
        await rm(probe, { force: true });
      } catch (err) {
        return failed(
          `${config.workspace} is not writable (${describeError(err)})`,
          `chown -R $(id -un) ${config.workspace}`,
        );
      }
      return pass(`${config.workspace} (writable)`);
    },
  };
}

/** Every top-level template file (AGENTS.md, SOUL.md, …) is in the workspace. */
export function bootstrapFilesCheck(config: Config): Check {
  return {
    name: 'bootstrap files',
    async run() {
      const wanted = (await listTemplateFiles(templatesDir())).filter((f) => !f.includes('/'));
      const missing: string[] = [];
      for (const file of wanted) {
        await access(path.join(config.workspace, file), constants.R_OK).catch(() => missing.push(file));
      }
      if (missing.length > 0)
        return failed(
          `missing ${missing.join(', ')}`,
          `${initHint(config)} (adds what is missing, never overwrites)`,
        );
      return pass(wanted.join(', '));
    },
  };
}
