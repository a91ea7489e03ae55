import { describe, expect, it } from 'vitest';
import { denyReason, isSecretEnvName, scrubEnv } from '../../../src/tools/exec-policy.js';

describe('exec deny list', () => {
  it.each([
    'rm -rf /',
    'rm -fr /',
    'rm -rf ~',
    'rm -Rf build',
    'rm -r -f build',
    'rm -f -r build',
    'rm --recursive --force build',
    'rm -rvf build',
    'sudo rm -rf /var',
    'cd /tmp && rm -rf *',
    'ls; /bin/rm -rf .',
    'find . -name x | xargs rm -rf',
    'echo $(rm -rf dir)',
    'mkfs.ext4 /dev/sda1',
    'mkfs -t ext4 /dev/sdb',
    'dd if=/dev/zero of=/dev/sda bs=1M',
    'dd if=/dev/urandom of=file',
    'shutdown -h now',
    'sudo reboot',
    'ls && halt',
    'poweroff',
    '/sbin/shutdown now',
    'init 0',
    'systemctl reboot',
    ':(){ :|:& };:',
    ':(){ :|: & };:',
    'bomb() { bomb | bomb & }; bomb',
    'echo hi > /dev/sda',
    'cat x > /dev/nvme0n1',
    'chmod -R 777 /',
    'chown -R nobody /',
    'wipefs -a /dev/sdb',
  ])('refuses %s', (command) => {
    expect(denyReason(command)).toBeTypeOf('string');
  });

  it.each([
    'ls -la',
    'rm notes.txt',
    'rm -r build',
    'rm -f stale.lock',
    'echo "shutdown is a word"',
    'grep -r force .',
    'git commit -m "rm -r old dir"',
    'chmod -R 755 ./scripts',
    'chmod 777 /tmp/x',
    'cat /dev/null > log.txt',
    'date',
    'mv a.txt b.txt',
    'python3 -c "print(1)"',
  ])('allows %s', (command) => {
    expect(denyReason(command)).toBeUndefined();
  });

  it('names the reason', () => {
    expect(denyReason('rm -rf /')).toBe('recursive forced delete (rm -rf)');
    expect(denyReason(':(){ :|:& };:')).toBe('a fork bomb');
    expect(denyReason('mkfs /dev/sda')).toBe('formatting a disk');
  });
});

describe('exec environment', () => {
  it.each([
    'OPENAI_API_KEY',
    'OPENAI_BASE_URL',
    'REDIS_URL',
    'TELEGRAM_BOT_TOKEN',
    'DISCORD_BOT_TOKEN',
    'AWS_SECRET_ACCESS_KEY',
    'DB_PASSWORD',
    'GOOGLE_APPLICATION_CREDENTIALS',
    'GH_AUTH',
    'api_key',
  ])('drops %s', (name) => {
    expect(isSecretEnvName(name)).toBe(true);
  });

  it('keeps ordinary variables and drops secret ones', () => {
    const env = scrubEnv({
      PATH: '/usr/bin',
      HOME: '/home/me',
      LANG: 'C.UTF-8',
      OPENAI_API_KEY: 'sk-1',
      MAGPIE_DASHBOARD_TOKEN: 't',
      REDIS_URL: 'redis://x',
    });
    expect(env).toEqual({ PATH: '/usr/bin', HOME: '/home/me', LANG: 'C.UTF-8' });
  });
});
