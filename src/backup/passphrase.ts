/**
 * The passphrase of `--with-secrets`: MAGPIE_BACKUP_PASSPHRASE (through the
 * Config), else asked for on a terminal without echo (twice when making a
 * backup, so a typo does not lock the secrets away). Without either, one line
 * and exit 2.
 */
import { ConfigError } from '../errors/index.js';
import { Prompter, type PromptStreams } from '../onboard/prompts.js';

/** Options of {@link backupPassphrase}. */
export interface PassphraseOptions {
  /** config.backup.passphrase. */
  configured: string | undefined;
  /** Ask twice (a new backup) or once (a restore). */
  confirm: boolean;
  /** @defaultValue stdin and stderr */
  streams?: PromptStreams;
}

/** The passphrase; see the file's header. */
export async function backupPassphrase(options: PassphraseOptions): Promise<string> {
  if (options.configured) return options.configured;
  const streams = options.streams ?? { input: process.stdin, output: process.stderr };
  if (streams.input.isTTY !== true)
    throw new ConfigError(
      '--with-secrets needs a passphrase: set MAGPIE_BACKUP_PASSPHRASE or run on a terminal',
    );
  const prompter = new Prompter(streams);
  try {
    const first = await prompter.ask('Backup passphrase', { hidden: true });
    if (first === '') throw new ConfigError('the backup passphrase may not be empty');
    if (options.confirm && (await prompter.ask('Again', { hidden: true })) !== first)
      throw new ConfigError('the two passphrases differ; nothing was written');
    return first;
  } finally {
    prompter.close();
  }
}
