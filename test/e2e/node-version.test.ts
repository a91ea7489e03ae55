/**
 * An older Node stops at once with one line saying which version to install:
 * the built `magpie` command and `npm start`/`npm test`'s set-up script, run
 * under a preload that makes this Node report itself as 20.19.0.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const pretendOld = `data:text/javascript,${encodeURIComponent(
  'Object.defineProperty(process.versions, "node", { value: "20.19.0" });',
)}`;

function runOld(
  script: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', pretendOld, script, ...args],
      { cwd: root },
      (err, stdout, stderr) => {
        const code: unknown = err ? (err as unknown as { code?: unknown }).code : 0;
        resolve({ code: typeof code === 'number' ? code : null, stdout, stderr });
      },
    );
  });
}

describe('on a Node older than 22.16', () => {
  it.each([
    ['the magpie command', path.join(root, 'dist', 'cli', 'bin.js'), ['agent', '-m', 'hi']],
    ['the set-up script of npm start and npm test', path.join(root, 'scripts', 'ensure.mjs'), ['test']],
  ])('%s stops with exit 2 and one line naming the version to install', async (_name, script, args) => {
    const out = await runOld(script, args);
    expect(out.code).toBe(2);
    expect(out.stdout).toBe('');
    const lines = out.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('this is Node.js 20.19.0');
    expect(lines[0]).toContain('install Node.js 24');
  });
});
