/**
 * Flags reach the config as overrides (`loadConfig({ overrides })`), beating
 * the environment and `.env`, and the environment is never written; the
 * commands' log levels; MAGPIE_DEBUG.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig, parseConfig } from '../../../src/app/config.js';
import { commandConfig, commandEnv, logLevel } from '../../../src/cli/startup.js';
import { debugEnabled, environment } from '../../../src/config/index.js';

const saved = { ...process.env };

function restoreEnv(): void {
  for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
  Object.assign(process.env, saved);
}

describe('loadConfig({ overrides })', () => {
  let dir: string;
  let envFile: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'magpie-overrides-'));
    envFile = path.join(dir, '.env');
    delete process.env.MAGPIE_WORKSPACE;
    delete process.env.MAGPIE_STATE_DIR;
    delete process.env.LOG_LEVEL;
  });
  afterEach(restoreEnv);

  it('--workspace beats MAGPIE_WORKSPACE from the environment and leaves process.env alone', () => {
    process.env.MAGPIE_WORKSPACE = path.join(dir, 'from-env');
    const config = loadConfig({ envFile, overrides: { workspace: path.join(dir, 'from-flag') } });
    expect(config.workspace).toBe(path.join(dir, 'from-flag'));
    expect(process.env.MAGPIE_WORKSPACE).toBe(path.join(dir, 'from-env'));
  });

  it('--workspace beats MAGPIE_WORKSPACE from .env, whose other values still count', () => {
    writeFileSync(envFile, `MAGPIE_WORKSPACE=${path.join(dir, 'from-file')}\nMAGPIE_MODEL=from-file-model\n`);
    const config = loadConfig({ envFile, overrides: { workspace: path.join(dir, 'flag') } });
    expect(config.workspace).toBe(path.join(dir, 'flag'));
    expect(config.llm.model).toBe('from-file-model');
    // .env is read into memory only: its values (secrets among them) reach no child process.
    expect(process.env.MAGPIE_WORKSPACE).toBeUndefined();
    expect(process.env.MAGPIE_MODEL).not.toBe('from-file-model');
    expect(environment().MAGPIE_MODEL).toBe('from-file-model');
  });

  it('a variable already set beats .env', () => {
    writeFileSync(envFile, 'MAGPIE_MODEL=from-file-model\n');
    process.env.MAGPIE_MODEL = 'from-env-model';
    expect(loadConfig({ envFile }).llm.model).toBe('from-env-model');
  });

  it('without an override the environment decides', () => {
    process.env.MAGPIE_WORKSPACE = path.join(dir, 'env-only');
    expect(loadConfig({ envFile, overrides: {} }).workspace).toBe(path.join(dir, 'env-only'));
    expect(loadConfig({ envFile }).workspace).toBe(path.join(dir, 'env-only'));
  });

  it('keeps the needs: llm without a key is refused', () => {
    delete process.env.OPENAI_API_KEY;
    expect(() => loadConfig({ envFile, llm: true })).toThrow(/OPENAI_API_KEY is not set/);
  });

  it('an override runs through the same validation as the variable (state folder inside it refused)', () => {
    process.env.MAGPIE_STATE_DIR = path.join(dir, 'ws', 'state');
    expect(() => loadConfig({ envFile, overrides: { workspace: path.join(dir, 'ws') } })).toThrow(
      /is inside the workspace/,
    );
  });

  it('environment() is a copy with the flags on top, for variables in mcp.json', () => {
    process.env.MAGPIE_WORKSPACE = '/env/ws';
    const env = environment({ workspace: '/flag/ws' });
    expect(env.MAGPIE_WORKSPACE).toBe('/flag/ws');
    expect(env).not.toBe(process.env);
    expect(process.env.MAGPIE_WORKSPACE).toBe('/env/ws');
    expect(environment()).not.toBe(process.env);
    expect(environment().MAGPIE_WORKSPACE).toBe('/env/ws');
  });

  it('commands: an empty --workspace leaves MAGPIE_WORKSPACE in charge, a given one wins', () => {
    process.env.MAGPIE_WORKSPACE = path.join(dir, 'env');
    expect(commandConfig({ workspace: '' }).workspace).toBe(path.join(dir, 'env'));
    expect(commandConfig({ workspace: path.join(dir, 'flag') }).workspace).toBe(path.join(dir, 'flag'));
    expect(commandEnv({ workspace: 'rel' }).MAGPIE_WORKSPACE).toBe('rel');
    expect(process.env.MAGPIE_WORKSPACE).toBe(path.join(dir, 'env'));
  });
});

describe('command log levels', () => {
  const at = (env: NodeJS.ProcessEnv) => parseConfig({ MAGPIE_WORKSPACE: '/tmp/magpie-ws', ...env });

  it('quiet commands log warnings only unless LOG_LEVEL is set', () => {
    expect(logLevel(at({}), 'quiet')).toBe('warn');
    expect(logLevel(at({ LOG_LEVEL: 'info' }), 'quiet')).toBe('info');
    expect(logLevel(at({ LOG_LEVEL: 'debug' }), 'quiet')).toBe('debug');
  });

  it('clients follow LOG_LEVEL only for debug and trace; servers follow it always', () => {
    expect(logLevel(at({ LOG_LEVEL: 'info' }), 'client')).toBe('warn');
    expect(logLevel(at({ LOG_LEVEL: 'trace' }), 'client')).toBe('trace');
    expect(logLevel(at({}), 'configured')).toBe('info');
    expect(logLevel(at({ LOG_LEVEL: 'error' }), 'configured')).toBe('error');
  });
});

describe('MAGPIE_DEBUG', () => {
  it('is on for any non-empty value and off when unset or empty', () => {
    expect(debugEnabled({ MAGPIE_DEBUG: '1' })).toBe(true);
    expect(debugEnabled({ MAGPIE_DEBUG: 'yes' })).toBe(true);
    expect(debugEnabled({ MAGPIE_DEBUG: '' })).toBe(false);
    expect(debugEnabled({})).toBe(false);
  });
});
