/**
 * The `.env` writer of `magpie onboard`: only the given variables change
 * (comments, other lines, `export` prefixes and multi-line values of other
 * variables kept), every written value reads back the same through node's
 * own parser (no value can smuggle in a second variable), and the file and
 * its backup are 0600 with no temporary file left behind.
 */
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseEnv } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors/index.js';
import { applyEnvUpdates, formatValue, readEnvFile, writeEnvFile } from '../../../src/onboard/env-file.js';

describe('applyEnvUpdates', () => {
  it('changes only the given variables and keeps every other line as it was', () => {
    const text = '# top\nA=1\n\n  export B="old value" # note\nC=keep\n#B=commented\n';
    const { text: out, replaced, added } = applyEnvUpdates(text, { B: 'new', D: 'added' });
    expect(out).toBe(
      '# top\nA=1\n\n  export B=new\nC=keep\n#B=commented\n\n# Set by magpie onboard\nD=added\n',
    );
    expect(replaced).toEqual(['B']);
    expect(added).toEqual(['D']);
  });

  it('replaces a quoted value spanning several lines whole, and every repeated assignment', () => {
    const text = 'KEY="line one\nline two"\nOTHER=x\nKEY=again\n';
    const { text: out } = applyEnvUpdates(text, { KEY: 'v' });
    expect(out).toBe('KEY=v\nOTHER=x\nKEY=v\n');
    expect(parseEnv(out)).toEqual({ KEY: 'v', OTHER: 'x' });
  });

  it('leaves the multi-line value of another variable alone', () => {
    const text = 'CERT="-----BEGIN\nA=not-a-variable\n-----END"\nA=1\n';
    const { text: out } = applyEnvUpdates(text, { A: '2' });
    expect(parseEnv(out)).toEqual({ CERT: '-----BEGIN\nA=not-a-variable\n-----END', A: '2' });
  });

  it('a file without a final newline gets one; an empty file gets only the new lines', () => {
    expect(applyEnvUpdates('A=1', { A: '2' }).text).toBe('A=2\n');
    expect(applyEnvUpdates('', { A: '2' }).text).toBe('# Set by magpie onboard\nA=2\n');
  });
});

describe('formatValue', () => {
  const roundTrip = (value: string) => parseEnv(`X=${formatValue('X', value)}\nY=after\n`);

  it.each([
    'sk-abc_123',
    'https://openrouter.ai/api/v1',
    'key with spaces',
    'has#hash',
    "it's",
    'say "hi"',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal ${…} must come back as written.
    '$HOME and ${PATH}',
    '',
  ])('%j reads back unchanged and ends at its own line', (value) => {
    expect(roundTrip(value)).toEqual({ X: value, Y: 'after' });
  });

  it('refuses a line break (it would start a second variable) naming the variable', () => {
    expect(() => formatValue('OPENAI_API_KEY', 'sk-1\nOPENAI_BASE_URL=https://evil.example')).toThrow(
      ConfigError,
    );
    expect(() => formatValue('OPENAI_API_KEY', 'sk-1\rB=2')).toThrow(/OPENAI_API_KEY/);
  });

  it('refuses a value holding both kinds of quote', () => {
    expect(() => formatValue('K', `a'b"c`)).toThrow(ConfigError);
  });
});

describe('writeEnvFile', () => {
  const dir = () => mkdtempSync(path.join(os.tmpdir(), 'magpie-envfile-'));

  it('an existing file: backed up (0600, same bytes), replaced atomically with mode 0600', async () => {
    const folder = dir();
    const file = path.join(folder, '.env');
    writeFileSync(file, '# mine\nA=1\nSECRET=old\n', { mode: 0o644 });
    const state = await readEnvFile(file);
    expect(state.values).toEqual({ A: '1', SECRET: 'old' });
    const result = await writeEnvFile(
      state,
      { SECRET: 'new' },
      { now: new Date('2026-01-02T03:04:05.678Z') },
    );
    expect(result.backup).toBe(`${file}.bak-20260102T030405Z`);
    expect(readFileSync(result.backup!, 'utf8')).toBe('# mine\nA=1\nSECRET=old\n');
    expect(statSync(result.backup!).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toBe('# mine\nA=1\nSECRET=new\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(result.replaced).toEqual(['SECRET']);
    expect(readdirSync(folder).sort()).toEqual(['.env', '.env.bak-20260102T030405Z']);
  });

  it('a second backup in the same second does not overwrite the first', async () => {
    const file = path.join(dir(), '.env');
    writeFileSync(file, 'A=1\n');
    const now = new Date('2026-01-02T03:04:05Z');
    const first = await writeEnvFile(await readEnvFile(file), { A: '2' }, { now });
    const second = await writeEnvFile(await readEnvFile(file), { A: '3' }, { now });
    expect(second.backup).toBe(`${first.backup}-1`);
    expect(readFileSync(first.backup!, 'utf8')).toBe('A=1\n');
    expect(readFileSync(second.backup!, 'utf8')).toBe('A=2\n');
  });

  it('a new file starts from the template and makes no backup', async () => {
    const folder = dir();
    const file = path.join(folder, '.env');
    const result = await writeEnvFile(await readEnvFile(file), { A: 'x' }, { template: '# doc\nA=\nB=2\n' });
    expect(result.backup).toBeUndefined();
    expect(readFileSync(file, 'utf8')).toBe('# doc\nA=x\nB=2\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(folder)).toEqual(['.env']);
  });

  it('a value that cannot be written leaves the old file and makes no backup', async () => {
    const folder = dir();
    const file = path.join(folder, '.env');
    writeFileSync(file, 'A=1\n');
    await expect(writeEnvFile(await readEnvFile(file), { A: 'x\nB=y' })).rejects.toThrow(ConfigError);
    expect(readFileSync(file, 'utf8')).toBe('A=1\n');
    expect(readdirSync(folder)).toEqual(['.env']);
  });
});
