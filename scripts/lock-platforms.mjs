#!/usr/bin/env node
// Completes package-lock.json with the other platforms' optional binaries (biome's CLI,
// msgpackr-extract) that npm leaves out when the registry it installs from lacks them.
// `npm ci` checks the lock against package.json and calls such a lock out of sync;
// with these entries (version, os, cpu, libc, the public registry's tarball URL) every
// platform's `npm ci` accepts it, and each installs only the binary of its own platform.
// Run after `npm install` changes the lock: `npm run lock:platforms`.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const lockPath = path.join(root, 'package-lock.json');
const lock = JSON.parse(readFileSync(lockPath, 'utf8'));
const PLATFORM = /-(darwin|linux|win32|android|freebsd)-(x64|arm64|arm|ia32)(-(musl|gnu|msvc))?$/;

const added = [];
for (const [key, entry] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const where = `${key === '' ? '' : `${key}/`}node_modules/${name}`;
    const hoisted = `node_modules/${name}`;
    if (lock.packages[where] || lock.packages[hoisted]) continue;
    const match = PLATFORM.exec(name);
    if (!match || !/^\d+\.\d+\.\d+$/.test(version)) continue; // only exact-version platform binaries
    const [, os, cpu, , libc] = match;
    const base = name.split('/').pop();
    lock.packages[hoisted] = {
      version,
      resolved: `https://registry.npmjs.org/${name}/-/${base}-${version}.tgz`,
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      os: [os],
      cpu: [cpu],
      ...(libc === 'musl' ? { libc: ['musl'] } : {}),
    };
    added.push(`${name}@${version}`);
  }
}

lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
console.log(added.length ? `lock-platforms: added ${added.join(', ')}` : 'lock-platforms: nothing missing');
