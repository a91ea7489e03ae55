/**
 * shedSecretEnvironment: secrets in the environment are blanked in place when
 * that can be done (environ-scrub.test.ts runs the real thing); otherwise the
 * process re-executes without them, handing them over through a private file
 * that the new process reads and removes; a hand-over file anyone else could
 * have written is refused.
 */
import { chmodSync, existsSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SECRET_VARIABLES } from '../../../src/cli/secret-variables.js';
import {
  HANDOFF_VARIABLE,
  isShedVariable,
  type ShedProcess,
  shedSecretEnvironment,
} from '../../../src/cli/shed-secrets.js';
import { environment } from '../../../src/config/index.js';
import { heldSecrets } from '../../../src/config/secret-env.js';

class Replaced extends Error {}

/** A process whose execve records the call and runs `then` (the new process) instead of replacing anything. */
function fakeProcess(env: NodeJS.ProcessEnv, then?: (env: NodeJS.ProcessEnv) => void) {
  const calls: Array<{ file: string; args: string[]; env: NodeJS.ProcessEnv }> = [];
  const proc: ShedProcess = {
    env,
    argv: ['/usr/bin/node', '/opt/magpie/dist/cli/bin.js', 'start'],
    execArgv: ['--enable-source-maps'],
    execPath: '/usr/bin/node',
    execve(file, args, newEnv) {
      calls.push({ file, args, env: newEnv });
      then?.(newEnv);
      throw new Replaced('execve stands in for the new process here');
    },
  };
  return { proc, calls };
}

describe('shedSecretEnvironment', () => {
  it('does nothing when no secret is in the environment', () => {
    const { proc, calls } = fakeProcess({ PATH: '/usr/bin', MAGPIE_WORKSPACE: '/ws' });
    expect(shedSecretEnvironment(proc)).toEqual({ kind: 'clean' });
    expect(calls).toEqual([]);
  });

  it('re-executes itself without the secrets; the new process receives them from a 0600 file it removes', () => {
    const secret = 'sk-shed-test-1f2e3d';
    let received: ReturnType<typeof shedSecretEnvironment> | undefined;
    let handoff = '';
    const { proc, calls } = fakeProcess(
      { PATH: '/usr/bin', OPENAI_API_KEY: secret, TELEGRAM_BOT_TOKEN: 'tg-secret', LANG: 'C.UTF-8' },
      (newEnv) => {
        handoff = newEnv[HANDOFF_VARIABLE] ?? '';
        expect(statSync(handoff).mode & 0o777).toBe(0o600);
        expect(statSync(path.dirname(handoff)).mode & 0o777).toBe(0o700);
        received = shedSecretEnvironment(fakeProcess({ ...newEnv }).proc);
      },
    );
    shedSecretEnvironment(proc);
    expect(calls).toHaveLength(1);
    const [call] = calls;
    expect(call?.file).toBe('/usr/bin/node');
    expect(call?.args).toEqual([
      '/usr/bin/node',
      '--enable-source-maps',
      '/opt/magpie/dist/cli/bin.js',
      'start',
    ]);
    expect(call?.env).toEqual({ PATH: '/usr/bin', LANG: 'C.UTF-8', [HANDOFF_VARIABLE]: handoff });
    expect(JSON.stringify(call?.env)).not.toContain(secret);
    expect(received).toEqual({ kind: 'received', names: ['OPENAI_API_KEY', 'TELEGRAM_BOT_TOKEN'] });
    expect(heldSecrets()).toMatchObject({ OPENAI_API_KEY: secret, TELEGRAM_BOT_TOKEN: 'tg-secret' });
    expect(environment().OPENAI_API_KEY).toBe(secret);
    expect(existsSync(handoff)).toBe(false);
    expect(existsSync(path.dirname(handoff))).toBe(false);
  });

  it('blanks them in place when it can: no re-execution, held in memory, out of process.env', () => {
    const env: NodeJS.ProcessEnv = { PATH: '/usr/bin', OPENAI_API_KEY: 'sk-in-place', LANG: 'C.UTF-8' };
    const { proc, calls } = fakeProcess(env);
    const asked: string[] = [];
    proc.scrubEnviron = (isSecret) => {
      // Called once the values are out of process.env, with the same notion of a secret.
      expect(env.OPENAI_API_KEY).toBeUndefined();
      asked.push(...['OPENAI_API_KEY', 'LANG'].filter(isSecret));
      return true;
    };
    expect(shedSecretEnvironment(proc)).toEqual({ kind: 'scrubbed', names: ['OPENAI_API_KEY'] });
    expect(asked).toEqual(['OPENAI_API_KEY']);
    expect(calls).toEqual([]);
    expect(env).toEqual({ PATH: '/usr/bin', LANG: 'C.UTF-8' });
    expect(heldSecrets().OPENAI_API_KEY).toBe('sk-in-place');
  });

  it('re-executes when blanking in place fails', () => {
    const { proc, calls } = fakeProcess({ PATH: '/usr/bin', SLACK_BOT_TOKEN: 'xoxb-1' });
    proc.scrubEnviron = () => false;
    expect(shedSecretEnvironment(proc)).toMatchObject({ kind: 'kept', names: ['SLACK_BOT_TOKEN'] });
    expect(calls).toHaveLength(1);
    expect(calls[0]?.env).toMatchObject({ PATH: '/usr/bin' });
    expect(calls[0]?.env.SLACK_BOT_TOKEN).toBeUndefined();
  });

  it('when execve fails, takes the secrets out of process.env at least and says why', () => {
    const env: NodeJS.ProcessEnv = { PATH: '/usr/bin', DISCORD_BOT_TOKEN: 'dc-secret' };
    const { proc } = fakeProcess(env);
    const outcome = shedSecretEnvironment(proc);
    expect(outcome).toMatchObject({ kind: 'kept', names: ['DISCORD_BOT_TOKEN'] });
    expect(env).toEqual({ PATH: '/usr/bin' });
    expect(heldSecrets().DISCORD_BOT_TOKEN).toBe('dc-secret');
  });

  it('refuses a hand-over file others can read or write, and one that does not exist', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-handoff-'));
    const file = path.join(dir, 'secrets.json');
    writeFileSync(file, JSON.stringify({ OPENAI_API_KEY: 'planted' }));
    chmodSync(file, 0o644);
    expect(() => shedSecretEnvironment(fakeProcess({ [HANDOFF_VARIABLE]: file }).proc)).toThrow(
      /MAGPIE_SECRET_HANDOFF names .* which is not a private \(0600\) file of this user: unset MAGPIE_SECRET_HANDOFF/,
    );
    expect(() =>
      shedSecretEnvironment(fakeProcess({ [HANDOFF_VARIABLE]: path.join(dir, 'missing') }).proc),
    ).toThrow(/does not exist/);
  });

  it('sheds every secret variable of magpie and its channels (the registry is not loaded to decide)', () => {
    const missed = [...SECRET_VARIABLES].filter((name) => !isShedVariable(name));
    expect(missed).toEqual([]);
    const env = Object.fromEntries([...SECRET_VARIABLES].map((name) => [name, `value-of-${name}`]));
    const { proc, calls } = fakeProcess({ PATH: '/usr/bin', ...env });
    // The fake execve throws, so the outcome is 'kept'; what matters is the environment it was handed.
    expect(shedSecretEnvironment(proc)).toMatchObject({ kind: 'kept', names: [...SECRET_VARIABLES] });
    expect(calls).toHaveLength(1);
    for (const name of SECRET_VARIABLES) expect(calls[0]?.env[name]).toBeUndefined();
    expect(calls[0]?.env.PATH).toBe('/usr/bin');
  });

  it('leaves a variable that is neither a secret by name nor a listed one', () => {
    expect(isShedVariable('DISCORD_ALLOWED_USERS')).toBe(false);
    expect(isShedVariable('TELEGRAM_ACCOUNTS')).toBe(true);
  });
});
