/**
 * The agent's own time per turn: N turns in-process through the real
 * AgentLoop (buildAgent: context, sessions, memory, skills, tools) against a
 * model that answers at once in-process, so each turn's wall time is magpie's
 * own work: building the context, appending to the session, the tool schemas,
 * assembling the prompt. The first turn of the process is reported apart
 * (cold code and files); the rest after a warm-up of 20. Turns go round `--sessions` chats, so histories grow
 * as they do. Prints p50/p99 ms per turn (goal: p50 under 5 ms) as JSON.
 *
 *   npx tsx bench/agent-turn.ts [--turns 500] [--sessions 20]
 *   node --cpu-prof --cpu-prof-dir /tmp/prof --import tsx bench/agent-turn.ts   # where the time goes
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { buildAgent } from '../src/app/build-agent.js';
import { parseConfig } from '../src/app/config.js';
import { silentLogger } from '../src/log/index.js';
import type { ChatRequest, ChatResponse, LLMProvider } from '../src/providers/types.js';
import { BIN, build } from '../test/e2e/daemon-helpers.js';

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '500' },
    sessions: { type: 'string', default: '20' },
  },
});
const turns = Number(values.turns);
const sessions = Number(values.sessions);

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return Math.round((sorted[Math.max(0, i)] ?? 0) * 100) / 100;
}

/** A model that answers at once, in-process: no HTTP, so the turn's time is magpie's. */
const instant: LLMProvider = {
  model: 'instant',
  async chat(request: ChatRequest): Promise<ChatResponse> {
    void request;
    return {
      content: 'ok',
      toolCalls: [],
      finishReason: 'stop',
      usage: { promptTokens: 1000, completionTokens: 1, totalTokens: 1001 },
      model: 'instant',
    };
  },
};

process.env.XDG_STATE_HOME = mkdtempSync(path.join(os.tmpdir(), 'magpie-bench-state-'));
build();
const workspace = path.join(mkdtempSync(path.join(os.tmpdir(), 'magpie-bench-turn-')), 'ws');
execFileSync(process.execPath, [BIN, 'init', '--workspace', workspace], { stdio: 'ignore' });
const config = parseConfig({
  MAGPIE_WORKSPACE: workspace,
  OPENAI_API_KEY: 'bench',
  MAGPIE_STREAM: 'off',
  MAGPIE_MAX_CALLS_PER_MINUTE: '100000',
});
const { agent } = await buildAgent({
  config,
  logger: silentLogger(),
  outbound: { publish: async () => {} },
  provider: instant,
});
const ms: number[] = [];
let firstTurnMs = 0;
const warmUp = Math.min(20, turns);
for (let i = 0; i < turns + warmUp; i++) {
  const t = performance.now();
  const result = await agent.processDirect(`message ${i}`, `cli:turn-${i % sessions}`);
  if (i === 0) firstTurnMs = performance.now() - t;
  if (i >= warmUp) ms.push(performance.now() - t);
  if (result.reply !== 'ok') throw new Error(`turn ${i} answered ${JSON.stringify(result.reply)}`);
}
ms.sort((a, b) => a - b);
process.stdout.write(
  `${JSON.stringify(
    {
      turns,
      sessions,
      historyPerSessionAtEnd: Math.ceil((turns + warmUp) / sessions),
      // The first turn of a fresh process: code not yet compiled, files not yet read (what `magpie agent -m` pays).
      firstTurnMs: Math.round(firstTurnMs * 10) / 10,
      ownMsPerTurn: {
        p50: percentile(ms, 50),
        p99: percentile(ms, 99),
        mean: percentile([ms.reduce((a, b) => a + b, 0) / ms.length], 50),
      },
      loadAverage: os.loadavg().map((l) => Math.round(l * 10) / 10),
    },
    null,
    2,
  )}\n`,
);
process.exit(0);
