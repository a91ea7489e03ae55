/** doctor's `.env` line: absent is fine; holding secrets it must be readable by its owner only. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CheckResult } from '../../../src/ops/doctor.js';
import { envFileCheck } from '../../../src/ops/doctor-env-file.js';

/** The check's one result. */
const check = async (at: string) => (await envFileCheck(at).run(new AbortController().signal)) as CheckResult;

const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-doctor-env-'));
const file = (name: string, text: string, mode: number) => {
  const full = path.join(dir, name);
  writeFileSync(full, text, { mode });
  return full;
};

describe('envFileCheck', () => {
  it('fails for a .env with secrets that others may read, naming them and the fix', async () => {
    const result = await check(file('open.env', 'OPENAI_API_KEY=sk-x\nMAGPIE_MODEL=m\n', 0o644));
    expect(result).toEqual({
      status: 'fail',
      detail: expect.stringMatching(
        /holds secrets \(OPENAI_API_KEY\) and other users may read it \(mode 0644\)/,
      ),
      fix: expect.stringMatching(/^chmod 600 /),
    });
    expect(JSON.stringify(result)).not.toContain('sk-x');
  });

  it('passes for a 0600 .env, and for a readable one without secrets', async () => {
    expect((await check(file('closed.env', 'OPENAI_API_KEY=sk-x\n', 0o600))).status).toBe('ok');
    expect((await check(file('plain.env', 'MAGPIE_MODEL=m\n', 0o644))).status).toBe('ok');
  });

  it('skips when there is none', async () => {
    expect((await check(path.join(dir, 'missing.env'))).status).toBe('skip');
  });
});
