/**
 * The tool registry: the tools of one agent by name, their definitions for
 * the provider, and `execute`, which turns every failure (unknown tool, bad
 * JSON, bad arguments, a thrown error, cancellation) into a result the model
 * reads. Secret values are redacted from whatever a tool returns.
 */
import type { z } from 'zod';
import { AppError, describeError } from '../errors/index.js';
import { redactSecrets } from '../log/index.js';
import type { ToolDefinition } from '../providers/types.js';
import { toJsonSchema } from './schema.js';
import { fail, type Tool, type ToolContext, type ToolResult } from './types.js';

/** What a cancelled tool call answers, so the history stays valid. */
export const CANCELLED_RESULT: Readonly<ToolResult> = Object.freeze({
  forLLM: 'operation cancelled by user',
  isError: true,
});

export interface ToolRegistryOptions {
  /**
   * Values removed from every tool result (API keys, bot tokens).
   * @defaultValue []
   */
  secrets?: Iterable<string | undefined>;
}

/** Removes secret values from both texts of a result. */
export function redactResult(result: ToolResult, secrets: readonly string[]): ToolResult {
  if (secrets.length === 0) return result;
  const out: ToolResult = { ...result, forLLM: redactSecrets(result.forLLM, secrets) };
  if (result.forUser !== undefined) out.forUser = redactSecrets(result.forUser, secrets);
  return out;
}

/** Zod issues as one line for the model: `path: expected string; offset: too small …`. */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => {
      const where = issue.path.length > 0 ? issue.path.map(String).join('.') : 'arguments';
      const message = issue.message.replace(/^Invalid input: /, '');
      return `${where}: ${message}`;
    })
    .join('; ');
}

/** Parses the model's argument text; empty text means no arguments. */
function parseArguments(raw: string): { ok: true; value: unknown } | { ok: false; error: string } {
  if (raw.trim() === '') return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(raw) };
  } catch (err) {
    return { ok: false, error: describeError(err) };
  }
}

/** Resolves with the cancelled result when `signal` aborts; never rejects. */
function whenAborted(signal: AbortSignal): { promise: Promise<ToolResult>; dispose: () => void } {
  let onAbort = (): void => {};
  const promise = new Promise<ToolResult>((resolve) => {
    onAbort = () => resolve({ ...CANCELLED_RESULT });
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) };
}

/** The tools one agent may call. Build it in the composition root; no global registry. */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();
  private readonly secrets: string[];
  /** Each tool's definition, made once: a tool's schema does not change, and zod's JSON Schema output is costly per turn. */
  private readonly defs = new WeakMap<Tool, ToolDefinition>();

  constructor(tools: Tool[] = [], options: ToolRegistryOptions = {}) {
    this.secrets = [...(options.secrets ?? [])].filter(
      (s): s is string => typeof s === 'string' && s.length >= 4,
    );
    for (const tool of tools) this.register(tool);
  }

  /** Adds a tool. @throws AppError INTERNAL when the name is taken. */
  register(tool: Tool): this {
    if (this.tools.has(tool.name)) {
      throw new AppError('INTERNAL', `a tool named ${tool.name} is already registered`);
    }
    this.tools.set(tool.name, tool);
    return this;
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  /** Tool names in registration order. */
  names(): string[] {
    return [...this.tools.keys()];
  }

  /** Definitions for the provider, parameters as JSON Schema (made once per tool; treat as read-only). */
  definitions(): ToolDefinition[] {
    return [...this.tools.values()].map((tool) => {
      let def = this.defs.get(tool);
      if (!def) {
        def = { name: tool.name, description: tool.description, parameters: toJsonSchema(tool.parameters) };
        this.defs.set(tool, def);
      }
      return def;
    });
  }

  /** Name and description of each tool, for the system prompt. */
  summaries(): { name: string; description: string }[] {
    return [...this.tools.values()].map(({ name, description }) => ({ name, description }));
  }

  /** A copy without some tools (helpers lose `spawn`); same secrets. */
  without(...names: string[]): ToolRegistry {
    const kept = [...this.tools.values()].filter((tool) => !names.includes(tool.name));
    return new ToolRegistry(kept, { secrets: this.secrets });
  }

  /**
   * Runs one tool call. Never throws: every failure becomes an `isError`
   * result phrased for the model; an aborted `ctx.signal` gives
   * {@link CANCELLED_RESULT}. Secrets are redacted from the result.
   */
  async execute(name: string, rawArguments: string, ctx: ToolContext): Promise<ToolResult> {
    return redactResult(await this.run(name, rawArguments, ctx), this.secrets);
  }

  private async run(name: string, rawArguments: string, ctx: ToolContext): Promise<ToolResult> {
    if (ctx.signal.aborted) return { ...CANCELLED_RESULT };
    const tool = this.tools.get(name);
    if (!tool) {
      return fail(`unknown tool ${name}; available: ${this.names().join(', ') || '(none)'}`);
    }
    const parsed = parseArguments(rawArguments);
    if (!parsed.ok) return fail(`arguments are not valid JSON: ${parsed.error}`);
    const checked = tool.parameters.safeParse(parsed.value);
    if (!checked.success) {
      return fail(`invalid arguments for ${name}: ${describeIssues(checked.error.issues)}`);
    }
    const aborted = whenAborted(ctx.signal);
    try {
      const running = tool.execute(checked.data, ctx).then(
        (result) => result,
        (err: unknown) => {
          ctx.logger.debug({ err, tool: name }, 'tool threw');
          return fail(`${name} failed: ${describeError(err)}`);
        },
      );
      const result = await Promise.race([running, aborted.promise]);
      return ctx.signal.aborted ? { ...CANCELLED_RESULT } : result;
    } finally {
      aborted.dispose();
    }
  }
}
