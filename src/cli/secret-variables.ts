/**
 * Which variables of `.env` hold secrets — magpie's own and every registered
 * channel's — so `magpie onboard` shows them masked, never in full.
 */
import { CHANNELS } from '../channels/registry.js';
import { CORE_SECRET_VARIABLES, shownValue } from '../onboard/context.js';

/** Variables whose values are secrets: shown masked, never in full. */
export const SECRET_VARIABLES: ReadonlySet<string> = new Set([
  ...CORE_SECRET_VARIABLES,
  ...CHANNELS.flatMap((d) => d.secretVariables),
]);

/** The value of a variable as onboard's summary shows it (a URL's password taken out too). */
export function shown(name: string, value: string): string {
  return shownValue(SECRET_VARIABLES, name, value);
}
