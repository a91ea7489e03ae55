/**
 * `magpie doctor`'s line about exec's sandbox: bubblewrap found and a probe
 * run working (its version, the sandbox mode — workspace read-write or
 * read-only — and the writable roots, network on or off, how processes are limited),
 * or, when none can start, that exec is disabled and why, with the fix.
 */
import { realpath } from 'node:fs/promises';
import type { Config } from '../config/index.js';
import { describeError } from '../errors/index.js';
import { resolveSandbox, sandboxAccess } from '../tools/sandbox.js';
import { type Check, type CheckResult, failed, pass, skipped } from './doctor.js';

const INSTALL = 'apt-get install bubblewrap';

/** The `exec sandbox` check, as MAGPIE_EXEC_SANDBOX and MAGPIE_EXEC_NETWORK set it up. */
export function execSandboxCheck(config: Config): Check {
  return {
    name: 'exec sandbox',
    async run(): Promise<CheckResult> {
      const mode = config.tools.execSandbox;
      if (mode === 'off') {
        return skipped(
          'off (MAGPIE_SANDBOX_MODE=full-access or MAGPIE_EXEC_SANDBOX=off): exec runs on the host as this user, guarded by a deny list only',
        );
      }
      let workspace: string;
      try {
        workspace = await realpath(config.workspace);
      } catch (err) {
        return skipped(`no workspace to try it in (${describeError(err)})`);
      }
      let status: Awaited<ReturnType<typeof resolveSandbox>>;
      try {
        status = await resolveSandbox(mode, {
          workspace,
          ...sandboxAccess(config),
          network: config.tools.execNetwork,
          execUser: config.tools.execUser,
          ...(config.tools.bwrapPath ? { bwrapPath: config.tools.bwrapPath } : {}),
          limits: {
            memoryBytes: config.tools.execMemoryBytes,
            fileSizeBytes: config.tools.execMaxWriteBytes,
          },
        });
      } catch (err) {
        return failed(describeError(err), `${INSTALL} (bubblewrap must be able to start here)`);
      }
      if (status.kind !== 'bwrap') {
        return failed(
          `exec is disabled: no sandbox could be started (${status.reason})`,
          `${INSTALL} (or set MAGPIE_EXEC_SANDBOX=off to run commands unsandboxed: exec can then read and do everything the magpie user can)`,
        );
      }
      const { sandbox } = status;
      if (!sandbox.limitsProcesses) {
        return failed(
          sandbox.describe(),
          'run magpie as a normal user (then RLIMIT_NPROC limits processes), or give root a writable pids cgroup',
        );
      }
      return pass(sandbox.describe());
    },
  };
}
