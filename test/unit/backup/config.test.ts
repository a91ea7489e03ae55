/** The backup variables: MAGPIE_BACKUP_SCHEDULE checked with one line, the defaults, and the passphrase kept secret. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { isSecretEnvName } from '../../../src/config/secret-env.js';
import { secretValues } from '../../../src/config/secrets.js';
import { configRefusal } from '../../fakes/config.js';

const base = { MAGPIE_WORKSPACE: '/tmp/magpie-backup-ws', MAGPIE_STATE_DIR: '/tmp/magpie-backup-state' };

describe('backup configuration', () => {
  it('reads the daily time, keeps 7 in <state>/backups by default', () => {
    const config = parseConfig({ ...base, MAGPIE_BACKUP_SCHEDULE: '03:30' });
    expect(config.backup).toEqual({
      schedule: { hour: 3, minute: 30 },
      keep: 7,
      dir: path.join('/tmp/magpie-backup-state', 'backups'),
      passphrase: undefined,
    });
    expect(parseConfig(base).backup.schedule).toBeUndefined();
    expect(
      parseConfig({ ...base, MAGPIE_BACKUP_KEEP: '2', MAGPIE_BACKUP_DIR: '/srv/b' }).backup,
    ).toMatchObject({
      keep: 2,
      dir: '/srv/b',
    });
  });

  it.each(['25:00', '3:30', '03:60', 'daily'])(
    'refuses MAGPIE_BACKUP_SCHEDULE=%s with one line naming it',
    (value) => {
      const err = configRefusal({ ...base, MAGPIE_BACKUP_SCHEDULE: value });
      expect(err.message).toContain('MAGPIE_BACKUP_SCHEDULE');
      expect(err.message).toContain('HH:MM');
      expect(err.message).not.toContain('\n');
    },
  );

  it('refuses MAGPIE_BACKUP_KEEP=0', () => {
    expect(configRefusal({ ...base, MAGPIE_BACKUP_KEEP: '0' }).message).toContain('MAGPIE_BACKUP_KEEP');
  });

  it('treats the passphrase as a secret: redacted from logs and shed from the environment', () => {
    const config = parseConfig({ ...base, MAGPIE_BACKUP_PASSPHRASE: 'correct horse battery' });
    expect(secretValues(config)).toContain('correct horse battery');
    expect(isSecretEnvName('MAGPIE_BACKUP_PASSPHRASE')).toBe(true);
  });
});
