/**
 * Turns a tool's zod parameters into the JSON Schema object the provider sends
 * to the model (zod 4's `z.toJSONSchema`, input side, without `$schema`).
 */
import { z } from 'zod';

/**
 * The JSON Schema of a tool's parameters, as the model should see it.
 * Uses the input shape, so fields with defaults are not listed as required.
 *
 * @example
 * toJsonSchema(z.object({ path: z.string() }))
 * // → { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }
 */
export function toJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  const { $schema: _dropped, ...rest } = json;
  return rest;
}
