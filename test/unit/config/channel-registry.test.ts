/**
 * The channel registry drives the configuration: every descriptor's variables
 * are in the schema and in `.env.example`, its secrets are redacted, its stream
 * switch is read, and a channel its settings leave off is not started.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EnvSchema, parseConfig } from '../../../src/app/config.js';
import { CHANNELS, channelDoctorChecks, enabledChannels } from '../../../src/channels/registry.js';
import { streamsTo } from '../../../src/config/index.js';
import { secretValues } from '../../../src/config/secrets.js';
import { textRedactor } from '../../../src/log/index.js';
import { buildChecks } from '../../../src/ops/doctor-checks.js';
import { configRefusal } from '../../fakes/config.js';

const example = readFileSync(new URL('../../../.env.example', import.meta.url), 'utf8');
const names = (config: Parameters<typeof enabledChannels>[0]) =>
  enabledChannels(config).map((c) => c.descriptor.name);

describe('the channel registry', () => {
  it('names each channel once', () => {
    const listed = CHANNELS.map((d) => d.name);
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed).toEqual([
      'cli',
      'telegram',
      'discord',
      'slack',
      'web',
      'email',
      'whatsapp',
      'signal',
      'matrix',
      'api',
    ]);
  });

  it.each(CHANNELS.map((d) => [d.name, d] as const))(
    '%s: its variables are in the schema and .env.example',
    (_name, d) => {
      for (const variable of Object.keys(d.env)) {
        expect(Object.keys(EnvSchema.shape)).toContain(variable);
        expect(example).toMatch(new RegExp(`^${variable}=`, 'm'));
      }
      if (d.stream) expect(Object.keys(d.env)).toContain(d.stream);
      for (const variable of d.secretVariables) expect(Object.keys(d.env)).toContain(variable);
    },
  );

  it.each(CHANNELS.map((d) => [d.name, d] as const))(
    '%s: its secrets and URL credentials are redacted',
    (_name, d) => {
      const env: Record<string, string> = {};
      const secrets: string[] = [];
      for (const variable of d.secretVariables) {
        const secret = `S3cret-${variable}-0123456789abcdef`;
        // Named bot accounts hold their tokens in name=token pairs.
        env[variable] = variable.endsWith('_ACCOUNTS') ? `one=${secret}` : secret;
        secrets.push(secret);
      }
      for (const variable of Object.keys(d.env).filter((v) => /_(API_ROOT|URL)$/.test(v))) {
        const password = `Pw-${variable}-0123456789`;
        env[variable] = `https://magpie:${password}@example.test/api`;
        secrets.push(password);
      }
      const config = parseConfig(env);
      const values = secretValues(config);
      const redact = textRedactor(values);
      for (const secret of secrets) {
        expect(values).toContain(secret);
        expect(redact(`failed with ${secret} in it`)).not.toContain(secret);
      }
    },
  );

  it("reads each channel's stream switch over MAGPIE_STREAM", () => {
    for (const d of CHANNELS.filter((c) => c.stream !== undefined)) {
      const config = parseConfig({ MAGPIE_STREAM: 'on', [d.stream as string]: 'off' });
      expect(streamsTo(config, d.name)).toBe(false);
      for (const other of CHANNELS.filter((c) => c !== d)) expect(streamsTo(config, other.name)).toBe(true);
    }
  });

  it('does not start a channel its settings leave off', () => {
    expect(names(parseConfig({}))).toEqual(['cli']);
    expect(names(parseConfig({ TELEGRAM_BOT_TOKEN: '1:abc' }))).toEqual(['cli', 'telegram']);
    expect(names(parseConfig({ DISCORD_BOT_TOKEN: 'abc', MAGPIE_DASHBOARD_PORT: '8080' }))).toEqual([
      'cli',
      'discord',
      'web',
    ]);
  });

  it('reads WHATSAPP_ALLOW_FROM as numbers in international form (digits) or *, and refuses anything else', () => {
    const allow = (value: string) => parseConfig({ WHATSAPP_ALLOW_FROM: value }).channels.whatsapp.allowFrom;
    expect(allow('+49 170 123-4567, +1 (555) 010.0000,*')).toEqual(['491701234567', '15550100000', '*']);
    expect(allow('')).toEqual([]);
    expect(configRefusal({ WHATSAPP_ALLOW_FROM: '+491701234567,@ada' }).message).toBe(
      'WHATSAPP_ALLOW_FROM "@ada" is not a phone number in international form (e.g. +491701234567) or *: fix it in .env (see .env.example)',
    );
    expect(configRefusal({ WHATSAPP_ALLOW_FROM: '0170 1234567' }).message).toContain('"0170 1234567"');
  });

  it("serves webhooks on a port of their own, never the dashboard's", () => {
    expect(parseConfig({}).webhook).toEqual({ port: undefined, host: '127.0.0.1' });
    expect(parseConfig({ MAGPIE_WEBHOOK_PORT: '8790', MAGPIE_WEBHOOK_HOST: '0.0.0.0' }).webhook).toEqual({
      port: 8790,
      host: '0.0.0.0',
    });
    expect(configRefusal({ MAGPIE_WEBHOOK_PORT: '8080', MAGPIE_DASHBOARD_PORT: '8080' }).message).toMatch(
      /^MAGPIE_WEBHOOK_PORT 8080 is the dashboard's port/,
    );
    expect(configRefusal({ MAGPIE_WEBHOOK_HOST: 'a b' }).message).toMatch(/^MAGPIE_WEBHOOK_HOST /);
    expect(names(parseConfig({ WHATSAPP_ACCESS_TOKEN: 'EAAG' }))).toEqual(['cli', 'whatsapp']);
  });

  it.each(CHANNELS.map((d) => [d.name] as const))(
    '%s: its descriptor module stays light (adapter, SDK, doctor and onboard loaded with import())',
    (name) => {
      const source = readFileSync(
        new URL(`../../../src/channels/${name}/descriptor.ts`, import.meta.url),
        'utf8',
      );
      const valueImports = [...source.matchAll(/^import\s+(?!type\b)[^;]*?from\s+'([^']+)'/gm)].map(
        (m) => m[1],
      );
      expect(valueImports).toContain('../descriptor.js');
      for (const from of valueImports) expect(from).toMatch(/^\.\.\/(\.\.\/config\/|descriptor\.js$)/);
    },
  );

  it("gives doctor each channel's check, skipped for a channel that is off", async () => {
    const config = parseConfig({});
    const doctor = buildChecks({ config, channelChecks: channelDoctorChecks(config) });
    try {
      const checks = doctor.checks.filter((c) => CHANNELS.some((d) => d.name === c.name));
      expect(checks.map((c) => c.name)).toEqual(CHANNELS.filter((d) => d.doctor).map((d) => d.name));
      for (const check of checks) {
        expect(await check.run(AbortSignal.timeout(1000))).toMatchObject({ status: 'skip' });
      }
    } finally {
      await doctor.close();
    }
  });
});
