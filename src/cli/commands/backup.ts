/** `magpie backup [--out FILE] [--with-secrets]`: one archive of the workspace and the Redis state, taken while the daemon runs. */

import path from 'node:path';
import { agentSources } from '../../backup/agents.js';
import { createBackup } from '../../backup/backup.js';
import { fileCount } from '../../backup/manifest.js';
import { backupPassphrase } from '../../backup/passphrase.js';
import { backupFileName } from '../../backup/schedule.js';
import { RedisBackupStore } from '../../bus/backup-store.js';
import { ExitCode } from '../../errors/index.js';
import { defineCommand } from '../command.js';
import { commandEnv, WORKSPACE_FLAG, withBus } from '../startup.js';

const HELP = `usage: magpie backup [--out FILE] [--with-secrets]

Writes one .tar.gz holding a manifest (versions, time, checksums), the workspace
(bootstrap files, memory, daily notes, sessions, skills), the same for every
other agent of agents.json (its workspace and the keys of its prefix) with
agents.json itself, the state folder's
approval rules and /model choices, and magpie's Redis keys (schedules, pairing,
approval rules, /model choices, channel positions, budgets, web chat messages,
unanswered messages and their turn jobs) from one moment. The daemon keeps
running. Caches, locks, live previews and the memory index are left out
(rebuilt). See "Backups and moving to a new machine" in docs/DEPLOYMENT.md.

options:
  --out FILE       the archive (default ./magpie-backup-<time>.tar.gz)
  --with-secrets   add .env, the dashboard token and the Matrix crypto store, encrypted
                   with age (passphrase: MAGPIE_BACKUP_PASSPHRASE, else asked for)
  --workspace DIR  overrides MAGPIE_WORKSPACE
  -h, --help       this help

exit codes: 0 written, 1 failed (a file kept changing, an I/O error), 2 bad usage,
config, passphrase or unwritable --out, 3 Redis unreachable`;

export const run = defineCommand({
  name: 'backup',
  help: HELP,
  flags: { out: { type: 'string' }, 'with-secrets': { type: 'boolean' }, ...WORKSPACE_FLAG },
  async run({ values }) {
    return withBus(values, 'quiet', async ({ config, bus }) => {
      const secrets = values['with-secrets']
        ? { passphrase: await backupPassphrase({ configured: config.backup.passphrase, confirm: true }) }
        : undefined;
      const store = new RedisBackupStore(bus.redis, bus.prefix);
      const { workspace, agents, agentsFile } = agentSources(
        config,
        commandEnv(values),
        (prefix) => new RedisBackupStore(bus.redis, prefix),
      );
      const result = await createBackup({
        workspace,
        agents,
        agentsFile,
        stateDir: config.stateDir,
        envFile: path.resolve('.env'),
        prefix: bus.prefix,
        store,
        out: values.out || backupFileName(Date.now()),
        secrets,
      });
      await store.recordLast({ file: result.file, at: result.manifest.createdAt, bytes: result.bytes });
      const { manifest } = result;
      const others = manifest.agents ?? [];
      const agentNote =
        others.length > 0
          ? `; agents ${others.map((a) => `${a.id} (${a.redisKeys} Redis keys)`).join(', ')}`
          : '';
      process.stdout.write(
        `backup written: ${result.file} (${result.bytes} bytes; ${fileCount(manifest)} files, ${manifest.redisKeys} Redis keys${agentNote}${manifest.secrets ? ', secrets encrypted' : ''})\n`,
      );
      return ExitCode.ok;
    });
  },
});
