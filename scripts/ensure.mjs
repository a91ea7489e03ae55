#!/usr/bin/env node
// Installs what is missing before `npm start` / `npm test` (after checking the Node.js version): npm packages, a built dist/,
// redis-server (from the system's package manager) when REDIS_URL is not set, and on Linux
// bubblewrap, exec's sandbox (unless MAGPIE_EXEC_SANDBOX=off or MAGPIE_SANDBOX_MODE=full-access). Quick when everything is
// there; says in one line what it installed.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// magpie runs on Node.js 22.16 and newer (24 LTS recommended; 22.16 is the first 22 whose node:sqlite has FTS5,
// which memory search needs); an older one stops here with the fix (src/cli/node-version.ts says the same).
const [nodeMajor, nodeMinor] = process.versions.node.split('.').map(Number);
if (nodeMajor < 22 || (nodeMajor === 22 && nodeMinor < 16)) {
  console.error(
    `magpie needs Node.js 22.16 or newer (24 LTS recommended); this is Node.js ${process.versions.node}: ` +
      'install Node.js 24, or run ". scripts/use-node.sh" in the checkout',
  );
  process.exit(2);
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const purpose = process.argv[2] ?? 'start';
const installed = [];

function has(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/** A variable's value from the environment, else from .env; undefined when unset or empty. */
function envValue(name) {
  if (process.env[name]) return process.env[name].trim();
  const envFile = path.join(root, '.env');
  if (!existsSync(envFile)) return undefined;
  // Within the line: an empty value (`NAME=`) is unset, not the next line's first word.
  const match = new RegExp(`^[ \\t]*${name}[ \\t]*=[ \\t]*(\\S+)`, 'm').exec(readFileSync(envFile, 'utf8'));
  return match?.[1]?.replace(/^["']|["']$/g, '');
}

if (!existsSync(path.join(root, 'node_modules', '.package-lock.json'))) {
  execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  installed.push('npm packages');
}

const distEntry = path.join(root, 'dist', 'cli', 'bin.js');
if (!existsSync(distEntry) || statSync(distEntry).mtimeMs < newestSource(path.join(root, 'src'))) {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
  // The bundler leaves unchanged files alone; mark the build as current.
  const now = new Date();
  utimesSync(distEntry, now, now);
  installed.push('a fresh build');
}

// System packages, in one apt run: redis-server (unless REDIS_URL names another Redis),
// bubblewrap on Linux (exec's sandbox; the tests use it), and for the tests Debian's
// Chromium at /usr/bin/chromium (the dashboard's browser test drives it).
const system = [];
if ((purpose === 'test' || !envValue('REDIS_URL')) && !has('redis-server')) system.push('redis-server');
const unsandboxed =
  envValue('MAGPIE_EXEC_SANDBOX')?.trim().toLowerCase() === 'off' ||
  envValue('MAGPIE_SANDBOX_MODE')?.trim().toLowerCase() === 'full-access';
const wantsSandbox = purpose === 'test' || !unsandboxed;
if (process.platform === 'linux' && wantsSandbox && !has('bwrap')) system.push('bubblewrap');
if (purpose === 'test' && !existsSync('/usr/bin/chromium')) system.push('chromium');
// The e-mail tests run Debian's Dovecot as their IMAP server (test/fakes/dovecot.ts).
if (purpose === 'test' && !existsSync('/usr/sbin/dovecot')) system.push('dovecot-imapd');
// MEMORY.md's history is a git repository (src/memory/history); without git the memory tools
// still work, with no history.
if (!has('git')) system.push('git');
// Spoken replies with MAGPIE_TTS=espeak (offline): espeak-ng, and opusenc for OGG/Opus. The
// voice tests use both; the network-namespace worker test uses `ip`.
const speaksOffline = envValue('MAGPIE_TTS')?.trim().toLowerCase() === 'espeak';
if ((purpose === 'test' || speaksOffline) && !has('espeak-ng')) system.push('espeak-ng');
if ((purpose === 'test' || speaksOffline) && !has('opusenc')) system.push('opus-tools');
if (purpose === 'test' && process.platform === 'linux' && !has('ip')) system.push('iproute2');
// The tests of TLS to Redis make their certificates with openssl (test/fakes/tls-certs.ts).
if (purpose === 'test' && !has('openssl')) system.push('openssl');
if (system.length > 0 && !has('apt-get') && purpose === 'start' && system.every((p) => p === 'bubblewrap')) {
  // Without bubblewrap exec falls back to its deny list (with a warning): not a reason to stop.
  console.error("magpie: bubblewrap not installed and no apt-get here: install it for exec's sandbox");
} else if (system.length > 0) {
  const sudo = process.getuid?.() === 0 ? [] : ['sudo'];
  const run = (args) =>
    execFileSync(sudo[0] ?? args[0], sudo.length ? args : args.slice(1), { stdio: 'inherit' });
  if (has('apt-get')) {
    run(['apt-get', 'update', '-qq']);
    run(['apt-get', 'install', '-y', '-qq', ...system]);
  } else {
    console.error(
      `magpie: ${system.join(' and ')} not installed and no apt-get here: install ${system.join(', ')}` +
        (system.includes('redis-server') ? ' (or set REDIS_URL)' : ''),
    );
    process.exit(2);
  }
  installed.push(...system);
}

if (installed.length > 0) console.error(`magpie: installed ${installed.join(', ')}`);

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSafe(dir)) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(full) : statSync(full).mtimeMs);
  }
  return newest;
}

function readdirSafe(dir) {
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}
