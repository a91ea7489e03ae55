/** `magpie start` (not built yet). */
export async function run(_argv: string[]): Promise<number> {
  process.stderr.write('magpie: "start" is not available in this build yet\n');
  return 1;
}
