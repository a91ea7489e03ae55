import { randomUUID } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import type { StateStore } from '../../../src/agent/ports.js';
import type { TurnOptions, TurnResult } from '../../../src/agent/types.js';
import type { Bus } from '../../../src/bus/bus.js';
import { keys } from '../../../src/bus/keys.js';
import { RedisStateStore } from '../../../src/bus/state.js';
import type { Config } from '../../../src/config/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { HeartbeatRunner } from '../../../src/scheduler/heartbeat.js';
import { capturingLogger, connectBus, outboundJobs, tempWorkspace, testConfig, waitFor } from './helpers.js';

const LONG = 'x'.repeat(400);

/** A scripted heartbeat agent: records prompts, answers with `reply`. */
function scriptedAgent(reply: string | undefined) {
  const prompts: string[] = [];
  return {
    prompts,
    async processHeartbeat(prompt: string): Promise<TurnResult> {
      prompts.push(prompt);
      return {
        sessionKey: 'heartbeat',
        reply,
        target: { channel: 'system', chatId: 'heartbeat' },
        metrics: {
          sessionKey: 'heartbeat',
          llmCalls: 1,
          promptTokens: 0,
          completionTokens: 0,
          toolCalls: [],
          wallMs: 1,
          outcome: 'ok',
        },
      };
    },
  };
}

describe('heartbeat tick (real Redis, real bus)', () => {
  let workspace: string;
  let config: Config;
  let bus: Bus;
  let state: StateStore;

  beforeEach(async () => {
    workspace = await tempWorkspace();
    config = testConfig(inject('redisUrl'), `test-${randomUUID()}`, workspace);
    bus = await connectBus(config);
    state = new RedisStateStore(bus.redis, bus.prefix);
    await state.setLastChannel('telegram', '1001');
  });
  afterEach(async () => {
    await bus.close();
    await rm(workspace, { recursive: true, force: true });
  });

  const writeTasks = (text: string) => writeFile(path.join(workspace, 'HEARTBEAT.md'), text);
  const runner = (
    agent: Pick<ReturnType<typeof scriptedAgent>, 'processHeartbeat'>,
    extra: Partial<ConstructorParameters<typeof HeartbeatRunner>[0]> = {},
  ) => new HeartbeatRunner({ config, bus, agent, state, logger: silentLogger(), ...extra });

  it.each([
    ['ask', true],
    ['deny', false],
  ])(
    'a risky step of the heartbeat is not run; with MAGPIE_APPROVAL_UNATTENDED=%s the last chat is told: %s',
    async (unattended, told) => {
      await writeTasks('- push the notes\n');
      const answers: string[] = [];
      const asking = {
        prompts: [] as string[],
        async processHeartbeat(prompt: string, options: TurnOptions = {}): Promise<TurnResult> {
          // What the loop's gate does with a risky call: ask the turn's approvals, nobody being there.
          answers.push(
            (await options.approvals?.askNow?.({ summary: 'run `git push` in the workspace' })) ?? 'none',
          );
          return scriptedAgent('HEARTBEAT_OK').processHeartbeat(prompt);
        },
      };
      const unattendedConfig = testConfig(inject('redisUrl'), bus.prefix, workspace, {
        MAGPIE_APPROVAL_UNATTENDED: unattended,
      });
      expect(await runner(asking, { config: unattendedConfig }).run('repeat:heartbeat:9')).toBe('ok');
      expect(answers).toEqual(['deny']);
      const jobs = await outboundJobs(bus, 'telegram');
      if (!told) {
        expect(jobs).toEqual([]);
        return;
      }
      expect(jobs).toEqual([
        {
          id: 'hb-denied-repeat-heartbeat-9',
          data: expect.objectContaining({
            chatId: '1001',
            content: expect.stringContaining('- run `git push` in the workspace\nNobody was here to approve'),
          }),
        },
      ]);
    },
  );

  it('skips without calling the model when HEARTBEAT.md is missing', async () => {
    const agent = scriptedAgent('unused');
    expect(await runner(agent).run('repeat:heartbeat:1')).toBe('skipped-missing');
    expect(agent.prompts).toHaveLength(0);
  });

  it('skips a header-only HEARTBEAT.md', async () => {
    await writeTasks('# Heartbeat\n\n<!-- Add tasks here -->\n- [ ]\n');
    const agent = scriptedAgent('unused');
    expect(await runner(agent).run('repeat:heartbeat:1')).toBe('skipped-empty');
    expect(agent.prompts).toHaveLength(0);
  });

  it('runs a turn with the tasks in the prompt and delivers a real reply to the last active chat', async () => {
    await writeTasks('# Heartbeat\n- check whether it will rain in Lisbon today\n');
    const agent = scriptedAgent('Rain expected in Lisbon at 15:00, take an umbrella.');
    expect(await runner(agent).run('repeat:heartbeat:1700000000000')).toBe('delivered');
    expect(agent.prompts[0]).toContain('check whether it will rain in Lisbon today');
    expect(agent.prompts[0]).toContain('HEARTBEAT_OK');
    const jobs = await outboundJobs(bus, 'telegram');
    expect(jobs).toEqual([
      {
        id: 'hb-repeat-heartbeat-1700000000000',
        data: expect.objectContaining({
          chatId: '1001',
          content: 'Rain expected in Lisbon at 15:00, take an umbrella.',
        }),
      },
    ]);
    // A redone tick (same job) cannot post twice.
    await runner(agent).run('repeat:heartbeat:1700000000000');
    expect(await outboundJobs(bus, 'telegram')).toHaveLength(1);
  });

  it.each([
    ['HEARTBEAT_OK', false],
    ['**HEARTBEAT_OK**', false],
    ['<b>HEARTBEAT_OK</b>', false],
    [`HEARTBEAT_OK ${'y'.repeat(200)}`, false],
    [`HEARTBEAT_OK ${LONG}`, true],
    ['The disk is full, so this is not HEARTBEAT_OK at all: clean it up.', true],
  ])('reply %j is delivered: %s', async (reply, delivered) => {
    await writeTasks('- check the disk\n');
    const agent = scriptedAgent(reply);
    expect(await runner(agent).run('repeat:heartbeat:2')).toBe(delivered ? 'delivered' : 'ok');
    expect(await outboundJobs(bus, 'telegram')).toHaveLength(delivered ? 1 : 0);
  });

  it('skips outside the active hours (in the configured zone)', async () => {
    await writeTasks('- check the disk\n');
    config = testConfig(inject('redisUrl'), bus.prefix, workspace, {
      MAGPIE_HEARTBEAT_ACTIVE_HOURS: '08:00-22:00',
      MAGPIE_TIMEZONE: 'Asia/Tokyo',
    });
    const agent = scriptedAgent('something');
    // 14:00 UTC is 23:00 in Tokyo.
    const night = runner(agent, { config, now: () => Date.UTC(2026, 5, 1, 14) });
    expect(await night.run('repeat:heartbeat:3')).toBe('skipped-inactive');
    const day = runner(agent, { config, now: () => Date.UTC(2026, 5, 1, 3) });
    expect(await day.run('repeat:heartbeat:4')).toBe('delivered');
    expect(agent.prompts).toHaveLength(1);
  });

  it('never overlaps a heartbeat that is still running', async () => {
    await writeTasks('- check the disk\n');
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = scriptedAgent('HEARTBEAT_OK');
    const slowAgent = {
      async processHeartbeat(prompt: string) {
        await gate;
        return slow.processHeartbeat(prompt);
      },
    };
    const first = new HeartbeatRunner({ config, bus, agent: slowAgent, state, logger: silentLogger() }).run(
      'a',
    );
    await waitFor(async () => (await bus.redis.exists(`${bus.prefix}:scheduler:heartbeat-lock`)) === 1);
    const second = scriptedAgent('HEARTBEAT_OK');
    expect(await runner(second).run('b')).toBe('skipped-overlap');
    expect(second.prompts).toHaveLength(0);
    release();
    expect(await first).toBe('ok');
    expect(await runner(second).run('c')).toBe('ok');
  });

  it('waits until the last chat has no running turn before delivering', async () => {
    await writeTasks('- check the disk\n');
    const running = keys.running(bus.prefix, 'telegram:1001');
    await bus.redis.set(running, 'someone', 'EX', 60);
    const { logger, lines } = capturingLogger();
    const agent = scriptedAgent('The disk is 95% full.');
    const tick = runner(agent, { logger, busyPollMs: 20 }).run('repeat:heartbeat:5');
    await waitFor(() => lines.some((l) => String(l.msg).includes('mid-turn')), 10_000, 'the wait log line');
    expect(await outboundJobs(bus, 'telegram')).toHaveLength(0);
    await bus.redis.del(running);
    expect(await tick).toBe('delivered');
    expect(await outboundJobs(bus, 'telegram')).toHaveLength(1);
  });

  it('keeps the reply when no chat has been active yet', async () => {
    await bus.redis.del(keys.lastChannel(bus.prefix));
    await writeTasks('- check the disk\n');
    expect(await runner(scriptedAgent('Disk full')).run('repeat:heartbeat:6')).toBe('no-chat');
  });
});
