import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError } from '../../../src/errors/index.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { ok, type Tool } from '../../../src/tools/types.js';
import { tempDirPerTest } from '../../fakes/workspace.js';
import { toolContext } from './helpers.js';

const echo: Tool = {
  name: 'echo',
  description: 'Echo the text back',
  parameters: z.object({ text: z.string(), times: z.number().int().min(1).default(1) }),
  execute: async (args: { text: string; times: number }) => ok(args.text.repeat(args.times)),
};
const thrower: Tool = {
  name: 'thrower',
  description: 'Always throws',
  parameters: z.object({}),
  execute: async () => {
    throw new Error('disk on fire with key sk-test-SECRET-123');
  },
};
const hanging: Tool = {
  name: 'hang',
  description: 'Never finishes',
  parameters: z.object({}),
  execute: () => new Promise(() => {}),
};
const leaky: Tool = {
  name: 'leaky',
  description: 'Returns a secret',
  parameters: z.object({}),
  execute: async () => ({ forLLM: 'token=sk-test-SECRET-123', forUser: 'sk-test-SECRET-123' }),
};

describe('ToolRegistry', () => {
  let ws: string;
  tempDirPerTest((dir) => {
    ws = dir;
  });

  it('makes each definition once (the schema is not regenerated per turn) and keeps new tools in order', () => {
    const registry = new ToolRegistry([echo]);
    const first = registry.definitions();
    expect(registry.definitions()[0]).toBe(first[0]);
    registry.register(thrower);
    expect(registry.definitions().map((d) => d.name)).toEqual(['echo', 'thrower']);
    expect(registry.definitions()[0]).toBe(first[0]);
  });

  it('lists names, definitions with JSON Schema parameters (no $schema) and summaries', () => {
    const registry = new ToolRegistry([echo, thrower]);
    expect(registry.names()).toEqual(['echo', 'thrower']);
    const [def] = registry.definitions();
    expect(def?.name).toBe('echo');
    expect(def?.description).toBe('Echo the text back');
    expect(def?.parameters).not.toHaveProperty('$schema');
    expect(def?.parameters).toMatchObject({
      type: 'object',
      properties: { text: { type: 'string' }, times: { type: 'integer', default: 1 } },
      required: ['text'],
    });
    expect(registry.summaries()).toEqual([
      { name: 'echo', description: 'Echo the text back' },
      { name: 'thrower', description: 'Always throws' },
    ]);
    expect(registry.get('echo')).toBe(echo);
    expect(registry.get('nope')).toBeUndefined();
  });

  it('refuses a duplicate name with an AppError', () => {
    const registry = new ToolRegistry([echo]);
    expect(() => registry.register(echo)).toThrow(AppError);
    expect(() => new ToolRegistry([echo, echo])).toThrow(/already registered/);
  });

  it('without() returns a copy minus the named tools and leaves the original intact', () => {
    const registry = new ToolRegistry([echo, thrower, hanging]);
    const helper = registry.without('hang', 'thrower');
    expect(helper.names()).toEqual(['echo']);
    expect(registry.names()).toEqual(['echo', 'thrower', 'hang']);
  });

  it('executes a tool with validated, defaulted arguments', async () => {
    const result = await new ToolRegistry([echo]).execute('echo', '{"text":"ab","times":2}', toolContext(ws));
    expect(result).toEqual({ forLLM: 'abab' });
    expect(await new ToolRegistry([echo]).execute('echo', '{"text":"x"}', toolContext(ws))).toEqual({
      forLLM: 'x',
    });
  });

  it('answers an unknown tool with the list of available ones', async () => {
    const result = await new ToolRegistry([echo, thrower]).execute('rm', '{}', toolContext(ws));
    expect(result).toEqual({ forLLM: 'Error: unknown tool rm; available: echo, thrower', isError: true });
  });

  it('answers malformed JSON', async () => {
    const result = await new ToolRegistry([echo]).execute('echo', '{"text": "a"', toolContext(ws));
    expect(result.isError).toBe(true);
    expect(result.forLLM).toMatch(/^Error: arguments are not valid JSON: /);
  });

  it('phrases schema failures for the model', async () => {
    const registry = new ToolRegistry([echo]);
    const wrongType = await registry.execute('echo', '{"text": 5}', toolContext(ws));
    expect(wrongType).toEqual({
      forLLM: 'Error: invalid arguments for echo: text: expected string, received number',
      isError: true,
    });
    const notObject = await registry.execute('echo', '"hello"', toolContext(ws));
    expect(notObject.forLLM).toBe(
      'Error: invalid arguments for echo: arguments: expected object, received string',
    );
  });

  it('treats empty argument text as no arguments', async () => {
    const result = await new ToolRegistry([thrower, echo]).execute('echo', '', toolContext(ws));
    expect(result.forLLM).toBe(
      'Error: invalid arguments for echo: text: expected string, received undefined',
    );
  });

  it('turns a thrown error into a result, with secrets redacted', async () => {
    const registry = new ToolRegistry([thrower], { secrets: ['sk-test-SECRET-123'] });
    const result = await registry.execute('thrower', '{}', toolContext(ws));
    expect(result).toEqual({
      forLLM: 'Error: thrower failed: disk on fire with key [redacted]',
      isError: true,
    });
  });

  it('redacts secrets from both texts of a result, also in a without() copy', async () => {
    const registry = new ToolRegistry([leaky, echo], { secrets: ['sk-test-SECRET-123'] }).without('echo');
    const result = await registry.execute('leaky', '{}', toolContext(ws));
    expect(result).toEqual({ forLLM: 'token=[redacted]', forUser: '[redacted]' });
  });

  it('answers "operation cancelled by user" when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const result = await new ToolRegistry([echo]).execute(
      'echo',
      '{"text":"x"}',
      toolContext(ws, { signal: controller.signal }),
    );
    expect(result).toEqual({ forLLM: 'operation cancelled by user', isError: true });
  });

  it('answers "operation cancelled by user" when aborted while a tool runs', async () => {
    const controller = new AbortController();
    const pending = new ToolRegistry([hanging]).execute(
      'hang',
      '{}',
      toolContext(ws, { signal: controller.signal }),
    );
    controller.abort();
    expect(await pending).toEqual({ forLLM: 'operation cancelled by user', isError: true });
  });
});

describe('ToolRegistry time limits', () => {
  let ws: string;
  tempDirPerTest((dir) => {
    ws = dir;
  });

  /** A tool that never resolves and records the signal it was given. */
  const stuck = (timeLimitMs?: Tool['timeLimitMs']): Tool & { signals: AbortSignal[] } => {
    const signals: AbortSignal[] = [];
    return {
      name: 'stuck',
      description: 'Never finishes',
      parameters: z.object({ seconds: z.number().optional() }),
      ...(timeLimitMs === undefined ? {} : { timeLimitMs }),
      execute: (_args, ctx) => {
        signals.push(ctx.signal);
        return new Promise(() => {});
      },
      signals,
    };
  };

  it('answers "timed out" at the default limit and aborts the tool\'s signal', async () => {
    const tool = stuck();
    const registry = new ToolRegistry([tool], { defaultTimeLimitMs: 50 });
    const result = await registry.execute('stuck', '{}', toolContext(ws));
    expect(result).toEqual({
      forLLM:
        'Error: stuck timed out after 0.05 s and was stopped; try a smaller step, or another way to get there',
      isError: true,
    });
    expect(tool.signals[0]?.aborted).toBe(true);
    expect(tool.signals[0]?.reason).toMatchObject({ code: 'TIMEOUT' });
    expect(tool.signals[0]?.reason).toBeInstanceOf(AppError);
  });

  it("uses the tool's own limit, fixed or from its arguments", async () => {
    const fixed = new ToolRegistry([stuck(30)], { defaultTimeLimitMs: 600_000 });
    expect((await fixed.execute('stuck', '{}', toolContext(ws))).forLLM).toContain('timed out after 0.03 s');
    const fromArgs = new ToolRegistry([
      stuck((args) => ((args as { seconds?: number }).seconds ?? 1) * 1000 + 20),
    ]);
    expect((await fromArgs.execute('stuck', '{"seconds":0.01}', toolContext(ws))).forLLM).toContain(
      'timed out after 0.03 s',
    );
    expect(fromArgs.timeLimitOf(fromArgs.get('stuck') as Tool, { seconds: 5 })).toBe(5020);
    expect(fromArgs.timeLimitOf(fromArgs.get('stuck') as Tool, {})).toBe(1020);
  });

  it('a stuck call does not hold up other calls, and the registry works on after it times out', async () => {
    const registry = new ToolRegistry([stuck(), echo], { defaultTimeLimitMs: 300 });
    const pending = registry.execute('stuck', '{}', toolContext(ws));
    let settled = false;
    void pending.then(() => {
      settled = true;
    });
    expect(await registry.execute('echo', '{"text":"meanwhile"}', toolContext(ws))).toEqual({
      forLLM: 'meanwhile',
    });
    expect(settled).toBe(false);
    expect((await pending).forLLM).toContain('timed out');
    expect(await registry.execute('echo', '{"text":"after"}', toolContext(ws))).toEqual({ forLLM: 'after' });
  });

  it('a cancelled call answers "cancelled", not "timed out", and passes the abort on', async () => {
    const tool = stuck();
    const controller = new AbortController();
    const pending = new ToolRegistry([tool], { defaultTimeLimitMs: 60_000 }).execute(
      'stuck',
      '{}',
      toolContext(ws, { signal: controller.signal }),
    );
    controller.abort();
    expect(await pending).toEqual({ forLLM: 'operation cancelled by user', isError: true });
    expect(tool.signals[0]?.aborted).toBe(true);
  });

  it('a call that finishes in time clears its timer: its result stands', async () => {
    const registry = new ToolRegistry([echo], { defaultTimeLimitMs: 20 });
    expect(await registry.execute('echo', '{"text":"quick"}', toolContext(ws))).toEqual({ forLLM: 'quick' });
  });

  it('rejects a default limit that is not above 0 and at most 24 h, and caps what a tool declares', () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 24 * 3_600_000 + 1]) {
      expect(() => new ToolRegistry([], { defaultTimeLimitMs: bad })).toThrow(/out of range/);
    }
    const registry = new ToolRegistry([stuck(Number.MAX_SAFE_INTEGER)]);
    expect(registry.timeLimitOf(registry.get('stuck') as Tool, {})).toBe(24 * 3_600_000);
    expect(registry.without('echo').timeLimitOf(echo, {})).toBe(120_000);
  });
});
