import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError } from '../../../src/errors/index.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { ok, type Tool } from '../../../src/tools/types.js';
import { tempDir, toolContext } from './helpers.js';

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
  let cleanup: () => Promise<void>;
  beforeEach(async () => {
    ({ dir: ws, cleanup } = await tempDir());
  });
  afterEach(() => cleanup());

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
