/**
 * The checks `magpie doctor` runs, in reading order, built from the Config:
 * workspace and bootstrap files (doctor-workspace.ts), exec's sandbox
 * (doctor-sandbox.ts), Redis (reachable, version, noeviction, persistence)
 * and the workspace's id on the bus (doctor-redis.ts), every configured model
 * (listed by its endpoint, optionally one live token; doctor-models.ts),
 * each channel's own check (its descriptor's `doctor`, e.g. a bot token
 * accepted; doctor-bots.ts), each MCP server and
 * the web search backend (doctor-reach.ts), and a worker seen alive.
 */
import type { Config } from '../config/index.js';
import type { SpeechEngine } from '../voice/engine.js';
import type { Check } from './doctor.js';
import { envFileCheck } from './doctor-env-file.js';
import { modelChecks } from './doctor-models.js';
import { mcpCheck, searchCheck } from './doctor-reach.js';
import { DoctorRedis, daemonCheck, redisCheck, workspaceIdentityCheck } from './doctor-redis.js';
import { execSandboxCheck } from './doctor-sandbox.js';
import { voiceCheck } from './doctor-voice.js';
import { bootstrapFilesCheck, workspaceCheck } from './doctor-workspace.js';

export interface DoctorOptions {
  config: Config;
  /** Also ask the model for one token. @defaultValue false */
  live?: boolean;
  /** magpie's environment, for `${VAR}` in mcp.json. @defaultValue process.env */
  env?: NodeJS.ProcessEnv;
  /**
   * Each channel's own check, in registry order (`channelDoctorChecks` in
   * src/channels/registry.ts; ops imports no channel). @defaultValue none
   */
  channelChecks?: readonly Check[];
  /** Builds the speech engine for --live (app/build-voice.ts; ops imports no provider). @defaultValue none: not spoken */
  speechEngine?: (voice: Config['voice']) => Promise<SpeechEngine | undefined>;
}

/** The checks plus a `close()` for the Redis connection they share. */
export interface DoctorChecks {
  checks: Check[];
  close(): Promise<void>;
}

/** Builds the doctor's checks in reading order. */
export function buildChecks(options: DoctorOptions): DoctorChecks {
  const { config } = options;
  const shared = new DoctorRedis();
  const checks: Check[] = [
    workspaceCheck(config),
    bootstrapFilesCheck(config),
    envFileCheck(),
    execSandboxCheck(config),
    redisCheck(config, shared),
    workspaceIdentityCheck(config, shared),
    // Every configured model: MAGPIE_MODEL, then each fallback (with --live, one token from each).
    ...modelChecks(config, options.live === true),
    voiceCheck(config.voice, options.live === true, options.speechEngine ?? (async () => undefined)),
    ...(options.channelChecks ?? []),
    mcpCheck(config, options.env ?? process.env),
    searchCheck(config),
    daemonCheck(config, shared),
  ];
  return {
    checks,
    async close() {
      shared.close();
    },
  };
}
