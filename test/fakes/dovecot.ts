/**
 * A real, private IMAP server for tests: Debian's Dovecot (`dovecot-imapd`),
 * started on a free 127.0.0.1 port with a throwaway configuration in a
 * temporary folder (plain logins on loopback, one passwd-file user, maildir
 * under the same folder; nothing written to system paths). Test mail is
 * delivered by APPEND over IMAP with the headers a case crafts.
 *
 * As root, Dovecot's own processes run as the system `dovecot`/`dovenull`
 * users (the package creates them) and the mail belongs to `nobody` (Dovecot
 * refuses mail access as uid 0); as anyone else, everything runs as that user.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ImapFlow } from 'imapflow';
import { freePort } from './redis-server.js';
import { waitFor } from './wait-for.js';

/** Where Debian puts the server binary. */
const DOVECOT = '/usr/sbin/dovecot';

export interface DovecotHandle {
  host: string;
  port: number;
  user: string;
  password: string;
  /** `imap://user:password@127.0.0.1:<port>/INBOX` (plain, loopback only). */
  url: string;
  /** Appends a raw RFC 5322 message to a mailbox (unseen), as a mail server's delivery would. */
  deliver(raw: string, mailbox?: string): Promise<void>;
  /** The flags of every message in the mailbox by UID. */
  flags(mailbox?: string): Promise<Map<number, Set<string>>>;
  stop(): Promise<void>;
}

/** Whether Dovecot is installed here (the tests need `apt-get install dovecot-imapd`). */
export function hasDovecot(): boolean {
  return spawnSync(DOVECOT, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Starts Dovecot; resolves once it accepts IMAP connections. */
export async function startDovecot(
  options: { user?: string; password?: string } = {},
): Promise<DovecotHandle> {
  if (!hasDovecot()) {
    throw new Error(
      `${DOVECOT} not found: the e-mail tests need Dovecot (apt-get install -y dovecot-imapd; npm test installs it)`,
    );
  }
  const user = options.user ?? 'magpie';
  const password = options.password ?? 'imap-test-password';
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-dovecot-'));
  const asRoot = process.getuid?.() === 0;
  const me = os.userInfo();
  const mailUid = asRoot ? 65534 : me.uid;
  const mailGid = asRoot ? 65534 : me.gid;
  const home = path.join(dir, 'home');
  mkdirSync(home, { recursive: true });
  if (asRoot) {
    // The folder is 0700 from mkdtemp; Dovecot's users need to reach their parts of it.
    chmodSync(dir, 0o755);
    chownSync(home, mailUid, mailGid);
  }
  const passwd = path.join(dir, 'passwd');
  writeFileSync(passwd, `${user}:{PLAIN}${password}::::::\n`, { mode: 0o644 });
  const config = path.join(dir, 'dovecot.conf');
  writeFileSync(
    config,
    [
      `base_dir = ${path.join(dir, 'run')}`,
      `state_dir = ${path.join(dir, 'state')}`,
      `instance_name = magpie-test-${port}`,
      'log_path = /dev/stderr',
      'protocols = imap',
      'listen = 127.0.0.1',
      'ssl = no',
      'disable_plaintext_auth = no',
      'auth_mechanisms = plain login',
      `default_internal_user = ${asRoot ? 'dovecot' : me.username}`,
      `default_login_user = ${asRoot ? 'dovenull' : me.username}`,
      `first_valid_uid = ${Math.min(mailUid, 1000)}`,
      'mail_location = maildir:~/Maildir',
      'namespace inbox {',
      '  inbox = yes',
      '  separator = /',
      '}',
      'passdb {',
      '  driver = passwd-file',
      `  args = scheme=PLAIN username_format=%u ${passwd}`,
      '}',
      'userdb {',
      '  driver = static',
      `  args = uid=${mailUid} gid=${mailGid} home=${home}/%u`,
      '}',
      'service imap-login {',
      '  chroot =',
      '  inet_listener imap {',
      '    address = 127.0.0.1',
      `    port = ${port}`,
      '  }',
      '  inet_listener imaps {',
      '    port = 0',
      '  }',
      '}',
      'service anvil {',
      '  chroot =',
      '}',
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(DOVECOT, ['-F', '-c', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout?.on('data', (c: Buffer) => {
    log += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    log += c.toString();
  });
  let exited: number | null | undefined;
  child.once('exit', (code) => {
    exited = code;
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      async () => {
        if (exited !== undefined) throw new Error(`dovecot exited with ${exited}: ${log.slice(-1000)}`);
        return accepts(port);
      },
      10_000,
      'dovecot to accept connections',
    );
  } catch (err) {
    await stop();
    throw err;
  }
  const url = `imap://${user}:${password}@127.0.0.1:${port}/INBOX`;
  const connect = async (): Promise<ImapFlow> => {
    const client = new ImapFlow({
      host: '127.0.0.1',
      port,
      secure: false,
      doSTARTTLS: false,
      auth: { user, pass: password },
      logger: false,
    });
    await client.connect();
    return client;
  };
  return {
    host: '127.0.0.1',
    port,
    user,
    password,
    url,
    async deliver(raw, mailbox = 'INBOX') {
      const client = await connect();
      try {
        await client.append(mailbox, raw, []);
      } finally {
        await client.logout();
      }
    },
    async flags(mailbox = 'INBOX') {
      const client = await connect();
      const out = new Map<number, Set<string>>();
      try {
        const lock = await client.getMailboxLock(mailbox);
        try {
          if (client.mailbox && client.mailbox.exists > 0) {
            for await (const m of client.fetch('1:*', { uid: true, flags: true })) {
              out.set(m.uid, m.flags ?? new Set());
            }
          }
        } finally {
          lock.release();
        }
      } finally {
        await client.logout();
      }
      return out;
    },
    stop,
  };
}

/** Whether something accepts TCP connections on the port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
