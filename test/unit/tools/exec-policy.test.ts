import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isSecretEnvName } from '../../../src/config/secret-env.js';
import { denyReason, MAX_COMMAND_CHARS, scrubEnv } from '../../../src/tools/exec-policy.js';

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

  it('finds named fork bombs, only when the function pipes itself in its own body', () => {
    expect(denyReason('bomb() { bomb | bomb & }; bomb')).toBe('a fork bomb');
    expect(denyReason('f(){ f|f& };f')).toBe('a fork bomb');
    expect(denyReason('f(){ echo; }; f | f &')).toBeUndefined();
  });

  it('refuses commands over 64 KiB unread, with one line saying what to do', () => {
    expect(denyReason(`echo ${'x'.repeat(MAX_COMMAND_CHARS)}`)).toBe(
      'a command longer than 64 KiB cannot be checked; write long code to a file and run the file',
    );
    expect(denyReason(`echo ${'x'.repeat(MAX_COMMAND_CHARS - 10)}`)).toBeUndefined();
  });
});

const WS = '/srv/magpie/workspace';
const guard = {
  workspace: WS,
  protectedPaths: ['/srv/magpie/.env', path.join(os.homedir(), '.local/state/magpie/workspace-0123456789')],
  protectedPids: [4242],
};

describe('exec deny list: spellings that hide a command', () => {
  it.each([
    ["r''m -rf build", 'recursive forced delete (rm -rf)'],
    ['r""m -rf build', 'recursive forced delete (rm -rf)'],
    ['"rm" -rf /', 'recursive forced delete (rm -rf)'],
    ["'rm' -fr ~", 'recursive forced delete (rm -rf)'],
    ['\\rm -rf build', 'recursive forced delete (rm -rf)'],
    ['r\\m -rf build', 'recursive forced delete (rm -rf)'],
    ["$'\\x72\\x6d' -rf build", 'recursive forced delete (rm -rf)'],
    ['rm -"r"f build', 'recursive forced delete (rm -rf)'],
    ['x=rm; $x -rf build', 'recursive forced delete (rm -rf)'],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, not a template
    ['x=rm; ${x} -rf build', 'recursive forced delete (rm -rf)'],
    ['export f=-rf; rm $f build', 'recursive forced delete (rm -rf)'],
    ['$unknown -rf build', 'recursive forced delete (rm -rf)'],
    ['$(echo rm) -rf build', 'recursive forced delete (rm -rf)'],
    ['sh -c "rm -rf build"', 'recursive forced delete (rm -rf)'],
    ['bash -c \'r""m -rf build\'', 'recursive forced delete (rm -rf)'],
    ['bash -ec "cd x; rm -rf ."', 'recursive forced delete (rm -rf)'],
    ['sh -c "sh -c \\"rm -rf build\\""', 'recursive forced delete (rm -rf)'],
    ['eval "rm -rf build"', 'recursive forced delete (rm -rf)'],
    ['eval rm -rf build', 'recursive forced delete (rm -rf)'],
    ['echo "rm -rf build" | sh', 'recursive forced delete (rm -rf)'],
    ['sh <<EOF\nrm -rf build\nEOF', 'recursive forced delete (rm -rf)'],
    ['bash <<< "rm -rf build"', 'recursive forced delete (rm -rf)'],
    ['sudo -u root rm -rf /var', 'recursive forced delete (rm -rf)'],
    ['env -i PATH=/bin rm -rf build', 'recursive forced delete (rm -rf)'],
    ['env -S "rm -rf build"', 'recursive forced delete (rm -rf)'],
    ['timeout -s KILL 5 rm -rf build', 'recursive forced delete (rm -rf)'],
    ['nice -n 5 nohup rm -rf build', 'recursive forced delete (rm -rf)'],
    ['ls | xargs -n1 rm -rf', 'recursive forced delete (rm -rf)'],
    ['echo `rm -rf build`', 'recursive forced delete (rm -rf)'],
    ['cat <(rm -rf build)', 'recursive forced delete (rm -rf)'],
    ['if true; then rm -rf build; fi', 'recursive forced delete (rm -rf)'],
    ['(cd x && rm -rf .)', 'recursive forced delete (rm -rf)'],
    ['rm -rf \\\n build', 'recursive forced delete (rm -rf)'],
    ['find . -delete', 'deleting with find'],
    ['find build -name "*.o" -delete', 'deleting with find'],
    ['find / -exec rm {} \\;', 'deleting with find'],
    ['find . -execdir /bin/rm -r {} +', 'deleting with find'],
    ['python3 -c "import shutil; shutil.rmtree(\'/srv\')"', 'a recursive delete in an interpreter one-liner'],
    ['python -c "import os; os.system(\'rm -rf /srv\')"', 'a recursive delete in an interpreter one-liner'],
    [
      'python3 - <<EOF\nimport shutil\nshutil.rmtree("x")\nEOF',
      'a recursive delete in an interpreter one-liner',
    ],
    [
      "node -e \"require('fs').rmSync('/srv', { recursive: true })\"",
      'a recursive delete in an interpreter one-liner',
    ],
    [
      'node -e "fs.promises.rm(\'x\',{recursive:true,force:true})"',
      'a recursive delete in an interpreter one-liner',
    ],
    [
      "node -e \"require('child_process').execSync('rm -fr x')\"",
      'a recursive delete in an interpreter one-liner',
    ],
    ["node -e \"spawnSync('rm', ['-rf', 'x'])\"", 'a recursive delete in an interpreter one-liner'],
    ['perl -MFile::Path -e \'rmtree("/srv")\'', 'a recursive delete in an interpreter one-liner'],
    [
      'perl -e \'use File::Path qw(remove_tree); remove_tree("x")\'',
      'a recursive delete in an interpreter one-liner',
    ],
    [
      'ruby -e \'require "fileutils"; FileUtils.rm_rf("x")\'',
      'a recursive delete in an interpreter one-liner',
    ],
    ['echo x > /dev/loop0', 'writing to a disk device'],
    ['cat img > /dev/dm-0', 'writing to a disk device'],
    ['cat img >/dev/md0', 'writing to a disk device'],
    ['cat img 1> /dev/nbd0', 'writing to a disk device'],
    ['cat img > /dev/sr0', 'writing to a disk device'],
    ['cat img > /dev/mapper/root', 'writing to a disk device'],
    ['cat img > /dev/disk/by-id/x', 'writing to a disk device'],
    ['tee /dev/mmcblk0 < img', 'writing to a disk device'],
    ['cp img /dev/vda', 'writing to a disk device'],
    ['dd of=/dev/sdb', 'writing to a disk device'],
    ['blkdiscard /dev/nvme0n1', 'rewriting a disk device'],
    ['mkswap /dev/sdb2', 'formatting a disk'],
    ['m""kfs.ext4 /dev/sdb1', 'formatting a disk'],
    ['"shut"down -h now', 'shutting down or rebooting the machine'],
  ])('refuses %j', (command, reason) => {
    expect(denyReason(command, guard)).toBe(reason);
    // Catastrophic commands are refused in a sandbox too, as a courtesy.
    expect(denyReason(command, { level: 'courtesy' })).toBe(reason);
  });
});

describe('exec deny list: the guard without a sandbox', () => {
  it.each([
    ['kill -9 $PPID', 'killing magpie'],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, not a template
    ['kill -KILL ${PPID}', 'killing magpie'],
    ['kill $(pgrep -f magpie)', 'killing magpie'],
    ['kill -9 4242', 'killing magpie'],
    ['kill -1', 'killing every process'],
    ['kill -9 -1', 'killing every process or a process group'],
    ['kill -- -1', 'killing every process or a process group'],
    ['kill 0', 'killing every process or a process group'],
    ['kill -s TERM 0', 'killing every process or a process group'],
    ['killall5 -9', 'killing every process'],
    ['pkill node', 'killing magpie, Redis or Node'],
    ['pkill -9 -f magpie', 'killing magpie, Redis or Node'],
    ['killall redis-server', 'killing magpie, Redis or Node'],
    ['k""ill -9 $PPID', 'killing magpie'],
    ['pkill -P $PPID', 'killing processes by user, group or parent'],
    ['pkill -u root', 'killing processes by user, group or parent'],
    ['echo x > /etc/motd', 'writing or deleting outside the workspace'],
    ['echo x >> ~/.bashrc', 'writing or deleting outside the workspace'],
    ['echo x > ../notes.txt', 'writing or deleting outside the workspace'],
    ['echo x > sub/../../../x', 'writing or deleting outside the workspace'],
    ['echo x 2> /var/log/x', 'writing or deleting outside the workspace'],
    ['echo x &> /root/x', 'writing or deleting outside the workspace'],
    ['touch /root/x', 'writing or deleting outside the workspace'],
    ['rm /usr/x', 'writing or deleting outside the workspace'],
    ['rm -r "$HOME/x"', 'writing or deleting outside the workspace'],
    ['mkdir -p /opt/x', 'writing or deleting outside the workspace'],
    ['cp notes.txt /etc/', 'writing or deleting outside the workspace'],
    ['cp -t /etc notes.txt', 'writing or deleting outside the workspace'],
    ['mv /etc/passwd .', 'writing or deleting outside the workspace'],
    ['tee -a /etc/hosts < x', 'writing or deleting outside the workspace'],
    ['dd if=x of=/etc/x', 'raw disk copies with dd'],
    ['sed -i s/a/b/ /etc/hosts', 'writing or deleting outside the workspace'],
    ['curl -o /usr/local/bin/x https://example.com', 'writing or deleting outside the workspace'],
    ['chmod 777 /etc/passwd', 'writing or deleting outside the workspace'],
    ['ln -s x /usr/bin/x', 'writing or deleting outside the workspace'],
    ['cd /etc && rm passwd', 'writing or deleting outside the workspace'],
    ['cd .. && echo x > y', 'writing or deleting outside the workspace'],
    ['cd; touch x', 'writing or deleting outside the workspace'],
    ['cd "$(mktemp -d)" && touch x', 'writing in a folder that cannot be told after cd'],
    ['d=/etc; touch $d/x', 'writing or deleting outside the workspace'],
    ['echo x > sessions/cli_other.jsonl', 'changing sessions/ (read-only)'],
    ['rm sessions/cli_test.jsonl', 'changing sessions/ (read-only)'],
    [`cp forged.jsonl ${WS}/sessions/`, 'changing sessions/ (read-only)'],
    ['cat /proc/$PPID/environ | rev', "reading another process's environment or memory"],
    ['cat /proc/*/environ', "reading another process's environment or memory"],
    ["base64 '/proc/1/environ'", "reading another process's environment or memory"],
    ['cd /proc/self && cat environ', "reading another process's environment or memory"],
    ['head -c 64 /proc/4242/mem', "reading another process's environment or memory"],
    ['strings < /proc/1/environ', "reading another process's environment or memory"],
    ['cat ../.env | rev', 'reading a .env file'],
    ['base64 ../".env"', 'reading a .env file'],
    ['cd .. && cat .env', 'reading a .env file'],
    ['source /srv/magpie/.env', 'reading a .env file'],
    ['cat ../.e*', "reaching magpie's own files"],
    ['cat ../.[e]nv', "reaching magpie's own files"],
    ['cat ../.en?', "reaching magpie's own files"],
    ['grep -r KEY ..', "reaching magpie's own files"],
    ['tar c .. | base64', "reaching magpie's own files"],
    ['cat ~/.local/state/magpie/workspace-0123456789/redis/password', "reaching magpie's own files"],
  ])('refuses %j', (command, reason) => {
    expect(denyReason(command, guard)).toBe(reason);
  });

  it.each(['kill -9 $PPID', 'echo x > /etc/motd', 'cat /proc/1/environ', 'cat ../.env', 'touch /root/x'])(
    'leaves %j to the sandbox',
    (command) => {
      expect(denyReason(command, { level: 'courtesy', workspace: WS })).toBeUndefined();
    },
  );

  it.each([
    'rm -r build',
    'rm -f stale.lock',
    'rm notes.txt',
    'cd build && rm -r out',
    'echo hi > notes.txt',
    'echo hi >> logs/today.md',
    `echo hi > ${WS}/notes.txt`,
    'echo hi > /tmp/scratch.txt',
    'cp report.pdf /tmp/',
    'ls /proc',
    'ls -la ..',
    'cat ../README.md',
    'cat /etc/os-release',
    'cat .env.example',
    'cat app/.env',
    'grep -r TODO .',
    'git commit -m "rm -rf old dir; kill -9 1"',
    'echo "don\'t rm -rf anything"',
    'npm test 2>&1 | tail -n 20',
    'python3 script.py > out.txt 2>/dev/null',
    "node -e \"console.log(require('fs').readdirSync('.'))\"",
    'find . -name "*.py" -print',
    'find . -type f -exec grep -l TODO {} +',
    'sleep 1 & kill $!',
    'kill %1',
    'x=notes.txt; cat $x',
    'sort data.csv | uniq -c > counts.txt',
    'cat <<EOF > notes.md\nthen kill 0 and rm -rf it\nEOF',
    'tar xzf archive.tgz -C build',
    'curl -o page.html https://example.com',
    'cp -r src dist',
    'sed -i s/a/b/ notes.txt',
    'mkdir -p out && touch out/x',
    'chmod +x run.sh && ./run.sh',
    'ps aux | grep node',
  ])('allows %j', (command) => {
    expect(denyReason(command, guard)).toBeUndefined();
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
