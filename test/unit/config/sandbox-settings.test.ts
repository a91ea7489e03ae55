/**
 * MAGPIE_SANDBOX_MODE with MAGPIE_EXEC_SANDBOX, MAGPIE_WRITABLE_ROOTS and the
 * approval settings: what they parse into, and one ConfigError line (exit 2)
 * for every combination or folder magpie refuses.
 */
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { ExitCode } from '../../../src/errors/index.js';
import { configRefusal } from '../../fakes/config.js';
import { tempDirPerTest } from '../../fakes/workspace.js';

/** `<dir>/ws` (the workspace), `<dir>/state` (the state folder), `<dir>/shared` and `<dir>/other` (free folders). */
let dir: string;
tempDirPerTest(async (made) => {
  dir = made;
  for (const name of ['ws', 'state', 'shared', 'other']) await mkdir(path.join(made, name));
}, 'magpie-sandbox-settings-');

const env = (extra: Record<string, string>) => ({
  MAGPIE_WORKSPACE: path.join(dir, 'ws'),
  MAGPIE_STATE_DIR: path.join(dir, 'state'),
  MAGPIE_MCP_CONFIG: path.join(dir, 'mcp.json'),
  MAGPIE_TIMEZONE: 'UTC',
  ...extra,
});
const config = (extra: Record<string, string> = {}) => parseConfig(env(extra));

/** The refusal's message, checked to be one line of a ConfigError (exit 2) naming every variable given. */
function refusal(extra: Record<string, string>, ...variables: string[]): string {
  const error = configRefusal(env(extra));
  expect(error.exitCode).toBe(ExitCode.config);
  expect(error.message).not.toMatch(/[\r\n]/);
  for (const variable of variables) expect(error.message).toContain(variable);
  return error.message;
}

describe('MAGPIE_SANDBOX_MODE', () => {
  it('defaults to workspace-write with no writable roots, exec in the sandbox (auto)', () => {
    const c = config();
    expect(c.sandbox).toEqual({ mode: 'workspace-write', writableRoots: [] });
    expect(c.tools.execSandbox).toBe('auto');
  });

  it('read-only keeps the sandbox, with MAGPIE_EXEC_SANDBOX as it says', () => {
    expect(config({ MAGPIE_SANDBOX_MODE: 'read-only' }).sandbox.mode).toBe('read-only');
    expect(config({ MAGPIE_SANDBOX_MODE: 'Read-Only' }).tools.execSandbox).toBe('auto');
    expect(config({ MAGPIE_SANDBOX_MODE: 'read-only', MAGPIE_EXEC_SANDBOX: 'bwrap' }).tools.execSandbox).toBe(
      'bwrap',
    );
  });

  it('full-access is MAGPIE_EXEC_SANDBOX=off, and MAGPIE_EXEC_SANDBOX=off alone is full-access', () => {
    const full = config({ MAGPIE_SANDBOX_MODE: 'full-access' });
    expect(full.sandbox.mode).toBe('full-access');
    expect(full.tools.execSandbox).toBe('off');
    const off = config({ MAGPIE_EXEC_SANDBOX: 'off' });
    expect(off.sandbox.mode).toBe('full-access');
    expect(off.tools.execSandbox).toBe('off');
    expect(config({ MAGPIE_SANDBOX_MODE: 'full-access', MAGPIE_EXEC_SANDBOX: 'off' }).tools.execSandbox).toBe(
      'off',
    );
  });

  it.each([
    ['full-access', 'bwrap'],
    ['full-access', 'auto'],
    ['read-only', 'off'],
    ['workspace-write', 'off'],
  ])('refuses %s with MAGPIE_EXEC_SANDBOX=%s in one line naming both', (mode, exec) => {
    const message = refusal(
      { MAGPIE_SANDBOX_MODE: mode, MAGPIE_EXEC_SANDBOX: exec },
      `MAGPIE_SANDBOX_MODE=${mode}`,
      `MAGPIE_EXEC_SANDBOX=${exec}`,
    );
    expect(message).toMatch(/remove one of the two/);
  });

  it('refuses an unknown mode, naming the three', () => {
    expect(refusal({ MAGPIE_SANDBOX_MODE: 'danger-full-access' }, 'MAGPIE_SANDBOX_MODE')).toMatch(
      /"danger-full-access" must be read-only, workspace-write or full-access/,
    );
  });
});

describe('MAGPIE_WRITABLE_ROOTS', () => {
  it('keeps absolute folders as real paths, in order, duplicates dropped', async () => {
    await symlink(path.join(dir, 'shared'), path.join(dir, 'link'));
    const roots = `${path.join(dir, 'other')}, ${path.join(dir, 'link')},${path.join(dir, 'shared')}`;
    expect(config({ MAGPIE_WRITABLE_ROOTS: roots }).sandbox.writableRoots).toEqual([
      path.join(dir, 'other'),
      path.join(dir, 'shared'),
    ]);
  });

  it('refuses a relative path', () => {
    expect(refusal({ MAGPIE_WRITABLE_ROOTS: 'shared' }, 'MAGPIE_WRITABLE_ROOTS')).toMatch(
      /holds shared, which is not an absolute path/,
    );
  });

  it('refuses /, a system folder and the private /tmp itself', () => {
    expect(refusal({ MAGPIE_WRITABLE_ROOTS: '/' }, 'MAGPIE_WRITABLE_ROOTS')).toMatch(/the whole file system/);
    expect(refusal({ MAGPIE_WRITABLE_ROOTS: '/etc' }, 'MAGPIE_WRITABLE_ROOTS')).toMatch(
      /inside \/etc, which the sandbox keeps read-only/,
    );
    expect(refusal({ MAGPIE_WRITABLE_ROOTS: '/usr/local' }, 'MAGPIE_WRITABLE_ROOTS')).toMatch(/inside \/usr/);
    expect(refusal({ MAGPIE_WRITABLE_ROOTS: '/tmp' }, 'MAGPIE_WRITABLE_ROOTS')).toMatch(/private \/tmp/);
  });

  it('refuses a folder that does not exist, and a file', async () => {
    expect(refusal({ MAGPIE_WRITABLE_ROOTS: path.join(dir, 'missing') }, 'MAGPIE_WRITABLE_ROOTS')).toMatch(
      /which does not exist: create the folder/,
    );
    await writeFile(path.join(dir, 'a-file'), 'x');
    expect(refusal({ MAGPIE_WRITABLE_ROOTS: path.join(dir, 'a-file') }, 'MAGPIE_WRITABLE_ROOTS')).toMatch(
      /which is not a folder/,
    );
  });

  it('refuses the state folder, a folder inside it and a folder holding it', async () => {
    await mkdir(path.join(dir, 'state', 'redis'));
    for (const root of [path.join(dir, 'state'), path.join(dir, 'state', 'redis')]) {
      expect(refusal({ MAGPIE_WRITABLE_ROOTS: root }, 'MAGPIE_WRITABLE_ROOTS')).toMatch(
        /overlaps magpie's state folder/,
      );
    }
    // A folder holding the state folder (and not the workspace).
    const outer = path.join(dir, 'outer');
    await mkdir(path.join(outer, 'state'), { recursive: true });
    expect(
      refusal(
        { MAGPIE_WRITABLE_ROOTS: outer, MAGPIE_STATE_DIR: path.join(outer, 'state') },
        'MAGPIE_WRITABLE_ROOTS',
      ),
    ).toMatch(/overlaps magpie's state folder/);
  });

  it('refuses the workspace, a folder inside it and a folder holding it (sessions/ would turn writable)', async () => {
    await mkdir(path.join(dir, 'ws', 'sessions'));
    expect(
      refusal({ MAGPIE_WRITABLE_ROOTS: path.join(dir, 'ws', 'sessions') }, 'MAGPIE_WRITABLE_ROOTS'),
    ).toMatch(/inside the workspace/);
    expect(refusal({ MAGPIE_WRITABLE_ROOTS: path.join(dir, 'ws') }, 'MAGPIE_WRITABLE_ROOTS')).toMatch(
      /contains the workspace/,
    );
    const holder = path.join(dir, 'holder');
    await mkdir(path.join(holder, 'ws'), { recursive: true });
    expect(
      refusal(
        { MAGPIE_WRITABLE_ROOTS: holder, MAGPIE_WORKSPACE: path.join(holder, 'ws') },
        'MAGPIE_WRITABLE_ROOTS',
      ),
    ).toMatch(/contains the workspace/);
  });

  it('refuses a folder holding mcp.json (exec could add a server)', async () => {
    await writeFile(path.join(dir, 'shared', 'mcp.json'), '{}');
    expect(
      refusal(
        {
          MAGPIE_WRITABLE_ROOTS: path.join(dir, 'shared'),
          MAGPIE_MCP_CONFIG: path.join(dir, 'shared', 'mcp.json'),
        },
        'MAGPIE_WRITABLE_ROOTS',
      ),
    ).toMatch(/holding mcp\.json/);
  });

  it('refuses one root inside another', async () => {
    await mkdir(path.join(dir, 'shared', 'inner'));
    const roots = `${path.join(dir, 'shared')},${path.join(dir, 'shared', 'inner')}`;
    expect(refusal({ MAGPIE_WRITABLE_ROOTS: roots }, 'MAGPIE_WRITABLE_ROOTS')).toMatch(
      /one inside the other/,
    );
  });

  it('refuses roots in read-only mode and without a sandbox, naming the setting', () => {
    const shared = path.join(dir, 'shared');
    expect(
      refusal(
        { MAGPIE_SANDBOX_MODE: 'read-only', MAGPIE_WRITABLE_ROOTS: shared },
        'MAGPIE_WRITABLE_ROOTS',
        'MAGPIE_SANDBOX_MODE=read-only',
      ),
    ).toMatch(/read-only mode lets exec write nothing/);
    refusal(
      { MAGPIE_SANDBOX_MODE: 'full-access', MAGPIE_WRITABLE_ROOTS: shared },
      'MAGPIE_WRITABLE_ROOTS',
      'MAGPIE_SANDBOX_MODE=full-access',
    );
    refusal(
      { MAGPIE_EXEC_SANDBOX: 'off', MAGPIE_WRITABLE_ROOTS: shared },
      'MAGPIE_WRITABLE_ROOTS',
      'MAGPIE_EXEC_SANDBOX=off',
    );
  });
});

describe('the approval settings', () => {
  it('default to risky, 10 minutes, ask', () => {
    expect(config().approval).toEqual({ mode: 'risky', timeoutMs: 600_000, unattended: 'ask' });
  });

  it('take off/risky/all, a duration and ask/deny', () => {
    expect(
      config({ MAGPIE_APPROVAL: 'ALL', MAGPIE_APPROVAL_TIMEOUT: '90s', MAGPIE_APPROVAL_UNATTENDED: 'deny' })
        .approval,
    ).toEqual({ mode: 'all', timeoutMs: 90_000, unattended: 'deny' });
    expect(config({ MAGPIE_APPROVAL: 'off' }).approval.mode).toBe('off');
  });

  it('refuse other values in one line naming the variable', () => {
    expect(refusal({ MAGPIE_APPROVAL: 'sometimes' }, 'MAGPIE_APPROVAL')).toMatch(
      /"sometimes" must be off, risky or all/,
    );
    expect(refusal({ MAGPIE_APPROVAL_TIMEOUT: 'soon' }, 'MAGPIE_APPROVAL_TIMEOUT')).toMatch(/not a duration/);
    expect(refusal({ MAGPIE_APPROVAL_UNATTENDED: 'allow' }, 'MAGPIE_APPROVAL_UNATTENDED')).toMatch(
      /"allow" must be ask or deny/,
    );
  });
});
