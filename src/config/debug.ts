/**
 * MAGPIE_DEBUG: a switch read on its own, without the schema, because the CLI
 * needs it for errors thrown before (or while) the config loads.
 */

/**
 * True when MAGPIE_DEBUG is set to any non-empty value: unexpected errors
 * (not AppErrors) then print their stack trace on stderr.
 */
export function debugEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.MAGPIE_DEBUG);
}
