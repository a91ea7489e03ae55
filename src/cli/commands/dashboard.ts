/** `magpie dashboard` (not built yet). */
export async function run(_argv: string[]): Promise<number> {
  process.stderr.write('magpie: "dashboard" is not available in this build yet\n');
  return 1;
}
