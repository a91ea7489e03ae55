/** A real buildAgent over a temp workspace with a scripted provider, for the load_skill / subagent / spawn tests. */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { type AgentParts, type BuildAgentOptions, buildAgent } from '../../../src/app/build-agent.js';
import { parseConfig } from '../../../src/app/config.js';
import { silentLogger } from '../../../src/log/index.js';
import { RecordingSink, type ScriptedProvider } from '../agent/loop-fixtures.js';
import { tempDir } from './helpers.js';

export interface AgentFixture extends AgentParts {
  dir: string;
  sink: RecordingSink;
  cleanup(): Promise<void>;
}

/** buildAgent with `provider` over a fresh workspace (with a skills folder); `env` adds variables to its config. */
export async function agentFixture(
  provider: ScriptedProvider,
  extra: Partial<BuildAgentOptions> = {},
  env: Record<string, string> = {},
): Promise<AgentFixture> {
  const { dir, cleanup } = await tempDir('magpie-agent-');
  await mkdir(path.join(dir, 'skills'), { recursive: true });
  const config = parseConfig({ MAGPIE_WORKSPACE: dir, MAGPIE_TIMEZONE: 'UTC', ...env });
  const sink = new RecordingSink();
  const parts = await buildAgent({ config, logger: silentLogger(), outbound: sink, provider, ...extra });
  return {
    ...parts,
    dir,
    sink,
    cleanup: async () => {
      await parts.agent.idle();
      await cleanup();
    },
  };
}
