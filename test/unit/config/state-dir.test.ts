/**
 * magpie's state folder: where it is by default, that it may not lie inside
 * the workspace (the tools could read its secrets), owner-only modes, and
 * secrets created once (two processes racing agree on one value).
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { defaultStateDir } from '../../../src/config/index.js';
import {
  ensurePrivateDir,
  randomSecret,
  readOrCreateSecret,
  writePrivateFile,
} from '../../../src/config/state-dir.js';
import { ConfigError } from '../../../src/errors/index.js';

const temp = () => mkdtempSync(path.join(os.tmpdir(), 'magpie-statedir-'));
const mode = (file: string) => statSync(file).mode & 0o777;

describe('the state folder in the config', () => {
  it('defaults to $XDG_STATE_HOME/magpie/<name>-<hash>, one per workspace', () => {
    const env = { XDG_STATE_HOME: '/var/state', HOME: '/home/me' };
    const a = defaultStateDir('/srv/ws', env);
    expect(a).toMatch(/^\/var\/state\/magpie\/ws-[0-9a-f]{10}$/);
    expect(defaultStateDir('/other/ws', env)).not.toBe(a);
    expect(defaultStateDir('/srv/ws', { HOME: '/home/me' })).toMatch(
      /^\/home\/me\/\.local\/state\/magpie\/ws-/,
    );
  });

  it('refuses (exit 2) a state folder inside the workspace, however it is spelled', () => {
    const workspace = '/srv/magpie/ws';
    for (const dir of [workspace, `${workspace}/state`, `${workspace}/a/../.state`, `${workspace}/`]) {
      const err = (() => {
        try {
          parseConfig({ MAGPIE_WORKSPACE: workspace, MAGPIE_STATE_DIR: dir });
        } catch (e) {
          return e;
        }
      })();
      expect(err, dir).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).exitCode).toBe(2);
      expect((err as Error).message).toMatch(/^MAGPIE_STATE_DIR .* is inside the workspace/);
    }
    // A home-folder workspace would hold the default ~/.local/state too.
    expect(() => parseConfig({ MAGPIE_WORKSPACE: '/home/me', HOME: '/home/me', XDG_STATE_HOME: '' })).toThrow(
      /inside the workspace/,
    );
  });

  it('accepts folders beside the workspace, even ones whose names start like it or with ..', () => {
    for (const dir of ['/srv/magpie/ws-state', '/srv/magpie/..ws', '/srv/magpie', '/var/lib/magpie']) {
      expect(parseConfig({ MAGPIE_WORKSPACE: '/srv/magpie/ws', MAGPIE_STATE_DIR: dir }).stateDir).toBe(dir);
    }
    expect(
      parseConfig({ MAGPIE_WORKSPACE: '/srv/ws', MAGPIE_STATE_DIR: '/srv/ws/../ws-state' }).stateDir,
    ).toBe('/srv/ws-state');
  });
});

describe('state folder files', () => {
  it('makes folders 0700, also ones that existed with looser modes', () => {
    const dir = path.join(temp(), 'a', 'b');
    ensurePrivateDir(dir);
    expect(mode(dir)).toBe(0o700);
    chmodSync(dir, 0o755);
    ensurePrivateDir(dir);
    expect(mode(dir)).toBe(0o700);
  });

  it('writes private files 0600, replacing them whole', () => {
    const file = path.join(temp(), 'info.json');
    writePrivateFile(file, 'one');
    writePrivateFile(file, 'two');
    expect(readFileSync(file, 'utf8')).toBe('two');
    expect(mode(file)).toBe(0o600);
  });

  it('creates a secret once (64 hex characters, 0600) and reads the same one after', () => {
    const file = path.join(temp(), 'secret');
    const first = readOrCreateSecret(file);
    expect(first).toMatch(/^[0-9a-f]{64}$/);
    expect(mode(file)).toBe(0o600);
    expect(readOrCreateSecret(file, () => 'another')).toBe(first);
    expect(randomSecret()).not.toBe(randomSecret());
  });

  it('resets a secret file left readable by others to 0600, and refuses an empty one', () => {
    const dir = temp();
    const file = path.join(dir, 'secret');
    writeFileSync(file, 'abc\n', { mode: 0o644 });
    expect(readOrCreateSecret(file)).toBe('abc');
    expect(mode(file)).toBe(0o600);
    writeFileSync(path.join(dir, 'empty'), '');
    expect(() => readOrCreateSecret(path.join(dir, 'empty'))).toThrow(/is empty: remove it/);
  });

  it('gives processes that create the secret at the same moment the same value', async () => {
    const file = path.join(temp(), 'raced');
    const module = path.resolve('src/config/state-dir.ts');
    const code = `import { readOrCreateSecret } from ${JSON.stringify(module)};
process.stdout.write(readOrCreateSecret(${JSON.stringify(file)}));`;
    const values = await Promise.all(
      Array.from(
        { length: 6 },
        () =>
          new Promise<string>((resolve, reject) => {
            const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code]);
            let out = '';
            child.stdout.on('data', (chunk: Buffer) => {
              out += chunk.toString();
            });
            child.once('error', reject);
            child.once('exit', (status) =>
              status === 0 ? resolve(out) : reject(new Error(`exit ${status}`)),
            );
          }),
      ),
    );
    expect(new Set(values).size).toBe(1);
    expect(values[0]).toBe(readFileSync(file, 'utf8').trim());
  });
});
