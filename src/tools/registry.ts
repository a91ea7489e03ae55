/**
 * The tool registry: the tools of one agent by name, their definitions for
 * the provider, and `execute`, which turns every failure (unknown tool, bad
 * JSON, bad arguments, a thrown error, cancellation, a time limit reached)
 * into a result the model reads. Every call has a time limit: on expiry the
 * tool's signal is aborted and the model reads "timed out" while the turn
 * goes on. Secret values are redacted from whatever a tool returns.
 */
import type { z } from 'zod';
import { AppError, describeError } from '../errors/index.js';
import { whenAborted } from '../lifecycle/when-aborted.js';
import { redactSecrets } from '../log/index.js';
import type { ToolDefinition } from '../providers/types.js';
import { toJsonSchema } from './schema.js';
import { fail, type Tool, type ToolContext, type ToolResult } from './types.js';

/** What a cancelled tool call answers, so the history stays valid. */
export const CANCELLED_RESULT: Readonly<ToolResult> = Object.freeze({
  forLLM: 'operation cancelled by user',
  isError: true,
});

/** The time limit of a call to a tool that declares none: 2 minutes. */
export const DEFAULT_TOOL_TIME_LIMIT_MS = 120_000;

/** The longest time limit a call may have (24 h), well inside what a Node timer can hold. */
export const MAX_TOOL_TIME_LIMIT_MS = 24 * 60 * 60 * 1000;

export interface ToolRegistryOptions {
  /**
   * Values removed from every tool result (API keys, bot tokens).
   * @defaultValue []
   */
  secrets?: Iterable<string | undefined>;
  /**
   * Time limit per call, in ms, for a tool that declares no `timeLimitMs`;
   * more than 0 and at most 24 h.
   * @defaultValue {@link DEFAULT_TOOL_TIME_LIMIT_MS} (2 minutes)
   */
  defaultTimeLimitMs?: number;
  /** Which tools this agent may have (agents.json `tools.allow`/`deny`); a refused one is not registered. @defaultValue all */
  allows?: (name: string) => boolean;
}

/** What a call answers when its time limit is reached. */
export function timedOutResult(name: string, limitMs: number): ToolResult {
  const seconds = Number((limitMs / 1000).toFixed(limitMs < 1000 ? 3 : 1));
  return fail(
    `${name} timed out after ${seconds} s and was stopped; try a smaller step, or another way to get there`,
  );
}

const validLimit = (ms: unknown): ms is number =>
  typeof ms === 'number' && Number.isFinite(ms) && ms > 0 && ms <= MAX_TOOL_TIME_LIMIT_MS;

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

/** The tools one agent may call. Build it in the composition root; no global registry. */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();
  private readonly secrets: string[];
  private readonly defaultTimeLimitMs: number;
  private readonly allows: (name: string) => boolean;
  /** Each tool's definition, made once: a tool's schema does not change, and zod's JSON Schema output is costly per turn. */
  private readonly defs = new WeakMap<Tool, ToolDefinition>();

  /** @throws AppError CONFIG_INVALID when `defaultTimeLimitMs` is not in (0, 24 h]. */
  constructor(tools: Tool[] = [], options: ToolRegistryOptions = {}) {
    const limit = options.defaultTimeLimitMs ?? DEFAULT_TOOL_TIME_LIMIT_MS;
    if (!validLimit(limit)) {
      throw new AppError(
        'CONFIG_INVALID',
        `tool time limit ${String(limit)} ms is out of range: give more than 0 and at most 24 h`,
      );
    }
    this.defaultTimeLimitMs = limit;
    this.allows = options.allows ?? (() => true);
    this.secrets = [...(options.secrets ?? [])].filter(
      (s): s is string => typeof s === 'string' && s.length >= 4,
    );
    for (const tool of tools) this.register(tool);
  }

  /** Adds a tool (unless `allows` refuses its name: then nothing). @throws AppError INTERNAL when the name is taken. */
  register(tool: Tool): this {
    if (!this.allows(tool.name)) return this;
    if (this.tools.has(tool.name)) {
      throw new AppError('INTERNAL', `a tool named ${tool.name} is already registered`);
    }
    this.tools.set(tool.name, tool);
    return this;
  }

  /** Removes a tool (MCP tools of a server that changed its list); true when it was there. */
  unregister(name: string): boolean {
    return this.tools.delete(name);
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  /** Whether the tool only reads (see `Tool.readOnly`); false for an unknown name. */
  isReadOnly(name: string): boolean {
    return this.tools.get(name)?.readOnly === true;
  }

  /** What the approval policy and the turn's taint need to know of a tool; undefined when unknown. */
  facts(name: string): { readOnly: boolean; mcp: boolean; untrustedOutput?: string } | undefined {
    const tool = this.tools.get(name);
    if (!tool) return undefined;
    return {
      readOnly: tool.readOnly === true,
      mcp: tool.mcp === true,
      ...(tool.untrustedOutput ? { untrustedOutput: tool.untrustedOutput } : {}),
    };
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
        const parameters = tool.jsonSchema ?? toJsonSchema(tool.parameters);
        def = { name: tool.name, description: tool.description, parameters };
        this.defs.set(tool, def);
      }
      return def;
    });
  }

  /** Name and description of each tool, for the system prompt. */
  summaries(): { name: string; description: string }[] {
    return [...this.tools.values()].map(({ name, description }) => ({ name, description }));
  }

  /** A copy without some tools (helpers lose `spawn`); same secrets and time limit. */
  without(...names: string[]): ToolRegistry {
    const kept = [...this.tools.values()].filter((tool) => !names.includes(tool.name));
    return new ToolRegistry(kept, { secrets: this.secrets, defaultTimeLimitMs: this.defaultTimeLimitMs });
  }

  /**
   * Runs one tool call. Never throws: every failure becomes an `isError`
   * result phrased for the model; an aborted `ctx.signal` gives
   * {@link CANCELLED_RESULT}; a call past its time limit gives
   * {@link timedOutResult} and the tool's signal is aborted (a tool that
   * ignores it runs on unseen, its result dropped). Secrets are redacted.
   */
  async execute(name: string, rawArguments: string, ctx: ToolContext): Promise<ToolResult> {
    return redactResult(await this.run(name, rawArguments, ctx), this.secrets);
  }

  /** The time limit of one call: the tool's own (fixed or from its arguments), else the default. */
  timeLimitOf(tool: Tool, args: unknown): number {
    const declared = typeof tool.timeLimitMs === 'function' ? tool.timeLimitMs(args) : tool.timeLimitMs;
    if (declared === undefined || Number.isNaN(declared)) return this.defaultTimeLimitMs;
    return Math.min(Math.max(declared, 1), MAX_TOOL_TIME_LIMIT_MS);
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
    const limitMs = this.timeLimitOf(tool, checked.data);
    const expiry = new AbortController();
    const callCtx: ToolContext = { ...ctx, signal: AbortSignal.any([ctx.signal, expiry.signal]) };
    const aborted = whenAborted(ctx.signal);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<ToolResult>((resolve) => {
      timer = setTimeout(() => {
        resolve(timedOutResult(name, limitMs));
        ctx.logger.warn({ tool: name, limitMs }, 'tool call timed out; its signal is aborted');
        expiry.abort(new AppError('TIMEOUT', `${name} timed out after ${limitMs} ms`));
      }, limitMs);
    });
    try {
      const running = Promise.resolve()
        .then(() => tool.execute(checked.data, callCtx))
        .then(
          (result) => result,
          (err: unknown) => {
            ctx.logger.debug({ err, tool: name }, 'tool threw');
            return fail(`${name} failed: ${describeError(err)}`);
          },
        );
      const result = await Promise.race([
        running,
        aborted.aborted.then((): ToolResult => ({ ...CANCELLED_RESULT })),
        expired,
      ]);
      if (ctx.signal.aborted) return { ...CANCELLED_RESULT };
      return expiry.signal.aborted ? timedOutResult(name, limitMs) : result;
    } finally {
      clearTimeout(timer);
      aborted.dispose();
    }
  }
}
