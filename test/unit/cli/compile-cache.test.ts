import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { privateCacheDir } from '../../../src/cli/compile-cache.js';

const uid = process.getuid?.() ?? -1;
const folders: string[] = [];
function base(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-cc-'));
  folders.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('the compile cache folder', () => {
  it('is made for this user alone (0700) and used again', () => {
    const where = base();
    const dir = privateCacheDir(where);
    expect(dir).toBe(path.join(where, `magpie-compile-cache-${uid}`));
    expect(statSync(dir!).mode & 0o777).toBe(0o700);
    expect(privateCacheDir(where)).toBe(dir);
  });

  it('is refused when others can write into it (made by someone else first)', () => {
    const where = base();
    const dir = path.join(where, `magpie-compile-cache-${uid}`);
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    expect(privateCacheDir(where)).toBeUndefined();
  });

  it('is refused when the name is a symbolic link to another folder', () => {
    const where = base();
    const elsewhere = path.join(where, 'elsewhere');
    mkdirSync(elsewhere, { mode: 0o700 });
    symlinkSync(elsewhere, path.join(where, `magpie-compile-cache-${uid}`));
    expect(privateCacheDir(where)).toBeUndefined();
  });
});
