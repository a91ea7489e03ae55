/** `magpie agent` (not built yet). */
export async function run(_argv: string[]): Promise<number> {
  process.stderr.write('magpie: "agent" is not available in this build yet\n');
  return 1;
}
