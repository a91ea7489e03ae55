/**
 * An MCP server's tool as a magpie Tool: named `<server>__<tool>`, with the
 * server's description and input schema (sent to the model as JSON Schema),
 * executed through the server's connection; the result is mapped (result.ts)
 * and the server's own secrets are redacted from it.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AppError, describeError } from '../errors/index.js';
import { redactResult } from '../tools/registry.js';
import { fail, type Tool } from '../tools/types.js';
import type { McpToolInfo } from './connection.js';
import { mapToolResult } from './result.js';

/** Any JSON object: the server checks its own arguments. */
const parameters = z.record(z.string(), z.unknown());

/** Longest description passed on (some servers write pages). */
const MAX_DESCRIPTION = 2_000;

export interface McpToolOptions {
  /** The server's name in mcp.json. */
  server: string;
  info: McpToolInfo;
  /** The model-facing name (names.ts). */
  name: string;
  /** Calls the tool on the server; rejects with an AppError phrased for the model. */
  call: (args: Record<string, unknown>, signal: AbortSignal) => Promise<CallToolResult>;
  /** Attach returned images for the model. */
  vision: boolean;
  /** Characters of output at most. */
  maxChars: number;
  /** The server's secrets (expanded variables, header tokens). */
  secrets: readonly string[];
  /** The registry's limit for one call: the MCP time limit plus a little, so the MCP one speaks first. */
  timeLimitMs: number;
}

/** The JSON Schema sent to the model: the server's, as an object schema, without `$schema`. */
export function modelSchema(schema: Record<string, unknown> | undefined): Record<string, unknown> {
  const { $schema: _dropped, ...rest } = schema ?? {};
  const out: Record<string, unknown> = { ...rest, type: 'object' };
  if (!out.properties || typeof out.properties !== 'object') out.properties = {};
  return out;
}

/** Builds the adapter. */
export function createMcpTool(options: McpToolOptions): Tool<typeof parameters> {
  const { server, info } = options;
  const described = info.description.trim() || `The ${info.name} tool of the MCP server "${server}".`;
  const secrets = [...options.secrets];
  return {
    name: options.name,
    description: described.length > MAX_DESCRIPTION ? `${described.slice(0, MAX_DESCRIPTION)}…` : described,
    parameters,
    jsonSchema: modelSchema(info.inputSchema),
    timeLimitMs: options.timeLimitMs,
    // Not read-only unless its server says so.
    readOnly: info.readOnly === true,
    mcp: true,
    untrustedOutput: `an answer of the MCP server ${server}`,
    async execute(args, ctx) {
      try {
        const result = await options.call(args, ctx.signal);
        return redactResult(
          mapToolResult(result, {
            server,
            tool: info.name,
            vision: options.vision,
            maxChars: options.maxChars,
          }),
          secrets,
        );
      } catch (err) {
        const message =
          err instanceof AppError ? err.message : `${options.name} failed: ${describeError(err)}`;
        return redactResult(fail(message), secrets);
      }
    },
  };
}
