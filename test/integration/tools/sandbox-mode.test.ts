/**
 * MAGPIE_SANDBOX_MODE and MAGPIE_WRITABLE_ROOTS in a real bubblewrap sandbox:
 * read-only mode — a command cannot write the workspace, the file tools refuse
 * every change, reading still works, nothing is handed over to the exec user;
 * a writable root — a command writes there (nosuid, nodev, not chowned) and
 * still nowhere else outside the workspace; and what `magpie doctor` says.
 */
import {
  chmod,
  chown,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/app/config.js';
import { execSandboxCheck } from '../../../src/ops/doctor-sandbox.js';
import { buildCoreTools } from '../../../src/tools/catalog.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import type { BwrapSandbox } from '../../../src/tools/sandbox.js';
import { toolContext } from '../../unit/tools/helpers.js';
import { bwrapSandbox } from './sandboxed-exec.js';

const asRoot = process.getuid?.() === 0;
/** The host user a root magpie runs commands as (MAGPIE_EXEC_USER's default, nobody). */
const NOBODY = 65534;

/** The core tools over `ws`, exec in `sandbox`, as buildAgent makes them for the mode. */
function toolsFor(ws: string, sandbox: BwrapSandbox, workspaceReadOnly: boolean): ToolRegistry {
  return new ToolRegistry(buildCoreTools({ workspace: ws, execSandbox: sandbox, workspaceReadOnly }));
}

describe('MAGPIE_SANDBOX_MODE=read-only in a real sandbox', () => {
  let root: string;
  let ws: string;
  let tools: ToolRegistry;
  const call = (name: string, args: Record<string, unknown>) =>
    tools.execute(name, JSON.stringify(args), toolContext(ws));

  beforeAll(async () => {
    root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'magpie-sandbox-ro-')));
    ws = path.join(root, 'ws');
    await mkdir(path.join(ws, 'notes'), { recursive: true });
    await writeFile(path.join(ws, 'notes', 'a.txt'), 'hello from the notes\n');
    // Readable by the exec user (as root: nobody), so only the mount can stop a write.
    await chmod(ws, 0o777);
    await chmod(path.join(ws, 'notes'), 0o777);
    await chmod(path.join(ws, 'notes', 'a.txt'), 0o666);
    tools = toolsFor(ws, await bwrapSandbox(ws, { workspaceReadOnly: true }), true);
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('a command that writes the workspace fails and leaves no file', async () => {
    const result = await call('exec', { command: 'echo x > f' });
    expect(result.isError).toBe(true);
    expect(result.forLLM).toMatch(/Read-only file system/);
    expect(await readdir(ws)).not.toContain('f');
    const append = await call('exec', { command: 'echo more >> notes/a.txt' });
    expect(append.isError).toBe(true);
    expect(await readFile(path.join(ws, 'notes', 'a.txt'), 'utf8')).toBe('hello from the notes\n');
  });

  it('a command still reads the workspace and writes its private /tmp', async () => {
    const result = await call('exec', { command: 'cat notes/a.txt && echo t > /tmp/t && cat /tmp/t' });
    expect(result.isError).toBeFalsy();
    expect(result.forLLM).toContain('hello from the notes\nt\n');
  });

  it('write_file, edit_file and append_file are refused in one line, and change nothing', async () => {
    const refused: Array<[string, Record<string, unknown>]> = [
      ['write_file', { path: 'new.txt', content: 'x' }],
      ['write_file', { path: 'notes/a.txt', content: 'replaced' }],
      ['edit_file', { path: 'notes/a.txt', old_text: 'hello', new_text: 'bye' }],
      ['append_file', { path: 'notes/a.txt', content: 'more' }],
    ];
    for (const [name, args] of refused) {
      const result = await call(name, args);
      expect(result.isError).toBe(true);
      expect(result.forLLM).toMatch(
        new RegExp(
          `^Error: ${name} refused: the workspace is read-only here \\(MAGPIE_SANDBOX_MODE=read-only\\)`,
        ),
      );
      expect(result.forLLM).not.toContain('\n');
    }
    expect(await readdir(ws)).not.toContain('new.txt');
    expect(await readFile(path.join(ws, 'notes', 'a.txt'), 'utf8')).toBe('hello from the notes\n');
  });

  it('read_file and list_dir still work', async () => {
    expect((await call('read_file', { path: 'notes/a.txt' })).forLLM).toContain('hello from the notes');
    expect((await call('list_dir', { path: 'notes' })).forLLM).toContain('a.txt');
  });

  it('hands nothing of the workspace over to the exec user (as root, root-owned files stay root-owned)', async () => {
    await call('exec', { command: 'true' });
    // Made by this process before any command ran (as root: root-owned, what a hand-over would change).
    for (const made of [ws, path.join(ws, 'notes'), path.join(ws, 'notes', 'a.txt')])
      expect((await stat(made)).uid, made).toBe(process.getuid?.());
  });

  it('says so in exec’s description and in the sandbox’s line', () => {
    const exec = tools.definitions().find((d) => d.name === 'exec');
    expect(exec?.description).toContain('the workspace is read-only');
    const write = tools.definitions().find((d) => d.name === 'write_file');
    expect(write?.description).toContain('Refused here: the workspace is read-only.');
  });
});

describe('MAGPIE_WRITABLE_ROOTS in a real sandbox', () => {
  let root: string;
  let ws: string;
  let shared: string;
  let other: string;
  let sandbox: BwrapSandbox;
  const exec = (command: string) =>
    toolsFor(ws, sandbox, false).execute('exec', JSON.stringify({ command }), toolContext(ws));

  beforeAll(async () => {
    root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'magpie-sandbox-roots-')));
    ws = path.join(root, 'ws');
    shared = path.join(root, 'shared');
    other = path.join(root, 'other');
    for (const dir of [ws, shared, other]) await mkdir(dir);
    // The root is the exec user's, as the operator must make it; `other` is writable by
    // everyone on the host, so only the sandbox keeps a command from writing it.
    if (asRoot) await chown(shared, NOBODY, NOBODY);
    await writeFile(path.join(shared, 'by-root.txt'), 'kept\n');
    await chmod(other, 0o777);
    await chmod(root, 0o755);
    sandbox = await bwrapSandbox(ws, { writableRoots: [shared] });
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('a command writes a file in the writable root, at the same path', async () => {
    const result = await exec(`echo made > ${shared}/out.txt && cat ${shared}/out.txt && echo w > ws-file`);
    expect(result.isError).toBeFalsy();
    expect(result.forLLM).toContain('made');
    expect(await readFile(path.join(shared, 'out.txt'), 'utf8')).toBe('made\n');
    expect(await readFile(path.join(ws, 'ws-file'), 'utf8')).toBe('w\n');
  });

  it('and still cannot write anywhere else outside the workspace', async () => {
    // `other` and /var/tmp are writable by everyone on the host, but not mounted in the sandbox.
    const result = await exec(
      `for f in ${other}/f /var/tmp/magpie-roots-test-${path.basename(root)} /opt/f; do (echo x > "$f") 2>/dev/null && echo "WROTE $f"; done; echo x > ${root}/f; echo checked`,
    );
    expect(result.forLLM).toContain('checked');
    expect(result.forLLM).not.toContain('WROTE');
    expect(await readdir(other)).toEqual([]);
    expect(await readdir('/var/tmp')).not.toContain(`magpie-roots-test-${path.basename(root)}`);
    // The folders above the root exist only in the sandbox's own /tmp: nothing reaches the host's.
    expect(await readdir(root)).not.toContain('f');
  });

  it('binds it nosuid and nodev, and does not chown what is in it', async () => {
    const result = await exec(`grep " ${shared} " /proc/self/mountinfo`);
    const options = result.forLLM.split(' ')[5] ?? '';
    expect(options.split(',')).toEqual(expect.arrayContaining(['rw', 'nosuid', 'nodev']));
    // Not handed over: the file magpie's user made there keeps its owner.
    expect((await stat(path.join(shared, 'by-root.txt'))).uid).toBe(process.getuid?.());
  });

  it('names the root in exec’s description and in the line doctor shows', () => {
    expect(sandbox.describe()).toContain(
      `mode workspace-write (workspace read-write), writable roots ${shared},`,
    );
    const description = toolsFor(ws, sandbox, false)
      .definitions()
      .find((d) => d.name === 'exec')?.description;
    expect(description).toContain(`also writable: ${shared}`);
  });

  it('refuses to run when the root was swapped for a symlink since start-up', async () => {
    const swapped = path.join(root, 'swapped');
    await mkdir(swapped);
    const later = await bwrapSandbox(ws, { writableRoots: [swapped] });
    await rename(swapped, `${swapped}-real`);
    await symlink(other, swapped);
    const result = await toolsFor(ws, later, false).execute(
      'exec',
      JSON.stringify({ command: `echo x > ${swapped}/f` }),
      toolContext(ws),
    );
    expect(result.isError).toBe(true);
    expect(result.forLLM).toMatch(/the writable root .*swapped is no longer a folder/);
    expect(await readdir(other)).toEqual([]);
  });
});

describe('magpie doctor’s exec sandbox line', () => {
  let root: string;
  beforeAll(async () => {
    root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'magpie-sandbox-doctor-mode-')));
    for (const dir of ['ws', 'shared']) await mkdir(path.join(root, dir));
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  const check = (env: Record<string, string>) =>
    execSandboxCheck(
      parseConfig({
        MAGPIE_WORKSPACE: path.join(root, 'ws'),
        MAGPIE_STATE_DIR: path.join(root, 'state'),
        ...env,
      }),
    ).run(new AbortController().signal);

  it('names the mode and the writable roots', async () => {
    expect(await check({})).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(
        /^bwrap [\d.]+, network off, mode workspace-write \(workspace read-write\), writable roots none, /,
      ),
    });
    expect(await check({ MAGPIE_SANDBOX_MODE: 'read-only' })).toMatchObject({
      detail: expect.stringMatching(
        /^bwrap [\d.]+, network off, mode read-only \(workspace read-only\), writable roots none, /,
      ),
    });
    expect(await check({ MAGPIE_WRITABLE_ROOTS: path.join(root, 'shared') })).toMatchObject({
      detail: expect.stringContaining(`, writable roots ${path.join(root, 'shared')}, processes`),
    });
    expect(await check({ MAGPIE_SANDBOX_MODE: 'full-access' })).toEqual({
      status: 'skip',
      detail:
        'off (MAGPIE_SANDBOX_MODE=full-access or MAGPIE_EXEC_SANDBOX=off): exec runs on the host as this user, guarded by a deny list only',
    });
  });
});
