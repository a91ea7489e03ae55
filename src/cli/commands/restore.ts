/** `magpie restore FILE [--force] [--with-secrets]`: an archive of `magpie backup` into an empty workspace and Redis prefix. */

import path from 'node:path';
import { agentPrefix } from '../../agents/agent-config.js';
import { fileCount } from '../../backup/manifest.js';
import { backupPassphrase } from '../../backup/passphrase.js';
import { restoreBackup } from '../../backup/restore.js';
import { RedisBackupStore } from '../../bus/backup-store.js';
import { ConfigError, ExitCode } from '../../errors/index.js';
import { defineCommand } from '../command.js';
import { commandConfig, commandLogger, WORKSPACE_FLAG } from '../startup.js';

const HELP = `usage: magpie restore FILE [--force] [--with-secrets]

Restores an archive of "magpie backup" into the workspace (MAGPIE_WORKSPACE),
the state folder and the Redis prefix (MAGPIE_QUEUE_PREFIX), and each other
agent it holds into its workspace and prefix, as the archive's agents.json
says (written to MAGPIE_AGENTS_CONFIG). Stop magpie first.
The archive is checked (format, every checksum) before anything is written; a
damaged one is refused. The targets must be empty: with --force the old
workspace is set aside as <workspace>.replaced-<time> and the prefix's keys are
replaced. Without REDIS_URL the private redis-server is started for it.

options:
  --force          replace a non-empty workspace, Redis prefix, state files or agents.json
  --with-secrets   also restore the encrypted .env (into ./.env), dashboard token and
                   Matrix crypto store (passphrase: MAGPIE_BACKUP_PASSPHRASE, else asked for)
  --workspace DIR  overrides MAGPIE_WORKSPACE
  -h, --help       this help

exit codes: 0 restored, 1 damaged archive or failed, 2 bad usage, not-empty target,
newer archive format or wrong passphrase, 3 Redis unreachable`;

export const run = defineCommand({
  name: 'restore',
  help: HELP,
  flags: { force: { type: 'boolean' }, 'with-secrets': { type: 'boolean' }, ...WORKSPACE_FLAG },
  positionals: true,
  async run({ values, positionals }) {
    const [file, ...extra] = positionals;
    if (file === undefined || extra.length > 0)
      throw new ConfigError(
        'magpie restore: give exactly one archive, e.g. magpie restore magpie-backup.tar.gz',
      );
    const config = commandConfig(values);
    const logger = commandLogger(config, 'quiet');
    const secrets = values['with-secrets']
      ? { passphrase: await backupPassphrase({ configured: config.backup.passphrase, confirm: false }) }
      : undefined;
    const { Bus } = await import('../../bus/bus.js');
    const { startLocalRedis } = await import('../../bus/local-redis.js');
    const { redis } = config;
    const local =
      redis.url || redis.sentinel || redis.cluster
        ? undefined
        : await startLocalRedis({ workspace: config.workspace, stateDir: config.stateDir, logger });
    try {
      const bus = await Bus.connect({ config, logger, url: local?.url });
      try {
        const result = await restoreBackup({
          file: path.resolve(file),
          workspace: config.workspace,
          stateDir: config.stateDir,
          envFile: path.resolve('.env'),
          store: new RedisBackupStore(bus.redis, bus.prefix),
          agentsFile: config.agentsFile,
          agentStore: (id) => new RedisBackupStore(bus.redis, agentPrefix(bus.prefix, id)),
          force: values.force === true,
          secrets,
        });
        const { manifest } = result;
        for (const replaced of result.replaced) process.stdout.write(`replaced: ${replaced}\n`);
        const secretNote = manifest.secrets
          ? result.secretsRestored
            ? ', secrets restored'
            : '; its secrets were left out (add --with-secrets to restore them)'
          : '';
        for (const agent of result.agents)
          process.stdout.write(
            `restored agent ${agent.id}: workspace ${agent.workspace}, ${agent.redisKeys} Redis keys\n`,
          );
        process.stdout.write(
          `restored ${path.resolve(file)} (made ${manifest.createdAt} by magpie ${manifest.magpieVersion}): ${fileCount(manifest)} files, ${result.redisKeys} Redis keys${secretNote}\n`,
        );
        return ExitCode.ok;
      } finally {
        await bus.close();
      }
    } finally {
      await local?.stop();
    }
  },
});
