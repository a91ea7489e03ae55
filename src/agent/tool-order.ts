/**
 * The order tools are shown to the model in: by name. Registration order can
 * differ between processes (MCP servers connect in any order and come back
 * after a restart), and tools sit near the start of every request, so any
 * difference there would make two workers' requests for one chat share no
 * cached prefix at all.
 */

/** A copy of `tools` sorted by name (code-point order, the same in every locale). */
export function inToolOrder<T extends { name: string }>(tools: readonly T[]): T[] {
  return [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
