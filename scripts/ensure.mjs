#!/usr/bin/env node
// Installs what is missing before `npm start` / `npm test`: npm packages, a built dist/,
// and redis-server (from the system's package manager) when REDIS_URL is not set.
// Quick when everything is there; says in one line what it installed.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const purpose = process.argv[2] ?? 'start';
const installed = [];

function has(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

function envHasRedisUrl() {
  if (process.env.REDIS_URL) return true;
  const envFile = path.join(root, '.env');
  return existsSync(envFile) && /^\s*REDIS_URL\s*=\s*\S+/m.test(readFileSync(envFile, 'utf8'));
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

// System packages: redis-server (unless REDIS_URL names another Redis), and for the tests
// Debian's Chromium at /usr/bin/chromium (the dashboard's browser test drives it).
const system = [];
if ((purpose === 'test' || !envHasRedisUrl()) && !has('redis-server')) system.push('redis-server');
if (purpose === 'test' && !existsSync('/usr/bin/chromium')) system.push('chromium');
if (system.length > 0) {
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
