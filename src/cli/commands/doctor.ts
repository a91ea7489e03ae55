/** `magpie doctor` (not built yet). */
export async function run(_argv: string[]): Promise<number> {
  process.stderr.write('magpie: "doctor" is not available in this build yet\n');
  return 1;
}
