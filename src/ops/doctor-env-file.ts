/**
 * `magpie doctor`'s line about `.env`: the file that holds magpie's secrets
 * should be readable by its owner only, since magpie reads them from it into
 * memory and nowhere else (config/secret-env.ts).
 */
import { readFile, stat } from 'node:fs/promises';
import { parseEnv } from 'node:util';
import { isSecretEnvName } from '../config/secret-env.js';
import { describeError } from '../errors/index.js';
import { type Check, failed, pass, skipped } from './doctor.js';

/** The `.env` check: absent is fine, present it must not be readable by group or others when it holds secrets. */
export function envFileCheck(file = '.env'): Check {
  return {
    name: 'secrets file',
    async run() {
      let mode: number;
      let names: string[];
      try {
        mode = (await stat(file)).mode & 0o777;
        names = Object.keys(parseEnv(await readFile(file, 'utf8')));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
          return skipped(
            `no ${file} here: secrets come from the environment (a daemon re-executes itself without them)`,
          );
        }
        return failed(`${file} could not be read (${describeError(err)})`, `fix or remove ${file}`);
      }
      const secrets = names.filter(isSecretEnvName);
      const octal = mode.toString(8).padStart(4, '0');
      if (secrets.length > 0 && (mode & 0o077) !== 0) {
        return failed(
          `${file} holds secrets (${secrets.join(', ')}) and other users may read it (mode ${octal})`,
          `chmod 600 ${file}`,
        );
      }
      return pass(`${file} (mode ${octal}, ${secrets.length} secret${secrets.length === 1 ? '' : 's'})`);
    },
  };
}
